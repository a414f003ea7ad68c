"""expect_parity(): the step-0 parity assertion inside a training run.

    fp = capture(model, optimizer, loss_fn, batch)
    expect_parity(fp, "gpu.json", on_mismatch="exit")   # the NPU run stops here unless at parity

`assert_parity` is for test suites (an AssertionError for pytest to show); a training job wants
a choice: "raise" a ParityError (which carries the ComparisonResult) for code that handles it,
"exit" to print the verdict exactly as `acclint compare` prints it and end the process with
status 1 and no traceback (a job scheduler sees a failed job, the log shows the verdict), or
"warn" to issue a ParityWarning (the `warnings` module: shown once by default, turned into an
error with `-W error::acclint.runtime.ParityWarning`, silenced with a filter) and go on training.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

from acclint.runtime_checks.compare.compare import ComparisonResult, compare
from acclint.runtime_checks.model.errors import FingerprintError
from acclint.runtime_checks.model.fingerprint import Fingerprint

ON_MISMATCH = ("raise", "exit", "warn")
# As `acclint compare`: 1 for a mismatch, 2 when the fingerprints cannot be compared.
EXIT_MISMATCH, EXIT_ERROR = 1, 2


class ParityError(AssertionError):
    """The run is not at step-0 parity with its reference; `result` is the full comparison."""

    def __init__(self, result: ComparisonResult) -> None:
        super().__init__(result.verdict())
        self.result = result


class ParityWarning(UserWarning):
    """on_mismatch="warn": the run is not at step-0 parity with its reference (the verdict is the message)."""


def expect_parity(
    fingerprint: "Fingerprint | str | Path",
    reference: "Fingerprint | str | Path",
    on_mismatch: str = "raise",
    **options: Any,
) -> ComparisonResult | None:
    """Compare `fingerprint` (this run) with `reference` (a loaded fingerprint or a file) and act
    on a mismatch as `on_mismatch` says; at parity return the ComparisonResult.

    "raise": ParityError carrying the result. "exit": the verdict on standard output, then exit
    status 1 (SystemExit, no traceback). "warn": a ParityWarning with the verdict; the result is
    returned. Fingerprints that cannot be compared (no such file, another format): "raise" raises
    the FingerprintError, "exit" prints it to standard error and exits with status 2, "warn"
    warns and returns None. `options` are compare()'s (rtol, atol, mapping, ...).
    """
    if on_mismatch not in ON_MISMATCH:
        raise FingerprintError(f"on_mismatch must be one of {', '.join(map(repr, ON_MISMATCH))}, got {on_mismatch!r}")
    try:
        result = compare(reference, fingerprint, **options)
    except FingerprintError as error:
        if on_mismatch == "raise":
            raise
        message = f"acclint expect_parity: cannot compare with the reference: {error}"
        if on_mismatch == "exit":
            print(message, file=sys.stderr, flush=True)
            raise SystemExit(EXIT_ERROR) from None
        warnings.warn(message, ParityWarning, stacklevel=2)
        return None
    if result.ok:
        return result
    if on_mismatch == "raise":
        raise ParityError(result)
    if on_mismatch == "exit":
        if _speaks(result.right):
            print(result.verdict(), flush=True)
        raise SystemExit(EXIT_MISMATCH)
    warnings.warn(result.verdict(), ParityWarning, stacklevel=2)
    return result


def _speaks(fingerprint: Fingerprint) -> bool:
    """Whether this process prints: every rank holds the same merged fingerprint, rank 0 says it once."""
    return not fingerprint.logical or fingerprint.rank == 0
