"""The in-run parity check the callbacks and `acclint capture` share.

One function, so that it can become a call of `acclint.runtime.expect_parity` once that exists
with the same three modes.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

from acclint.runtime_checks.compare import ComparisonResult, compare

ON_MISMATCH = ("exit", "warn", "raise")


def check_on_mismatch(on_mismatch: str) -> str:
    if on_mismatch not in ON_MISMATCH:
        raise ValueError(f"on_mismatch must be one of {', '.join(ON_MISMATCH)}, got {on_mismatch!r}")
    return on_mismatch


def expect(fingerprint: Any, reference: "str | Path", on_mismatch: str, show: bool = True) -> ComparisonResult:
    """Compare `fingerprint` with the reference file. At parity one line is printed (when `show`);
    on a mismatch: "raise" raises AssertionError with the verdict, "exit" prints it and raises
    SystemExit(1) (no traceback), "warn" warns with it and returns. `show` False (the ranks after
    rank 0) prints nothing but acts alike."""
    result = compare(fingerprint, reference)
    if result.ok:
        if show:
            print(f"acclint: step 0 at parity with {reference}", file=sys.stderr, flush=True)
        return result
    verdict = result.verdict()
    if on_mismatch == "raise":
        raise AssertionError(verdict)
    if on_mismatch == "exit":
        if show:
            print(verdict, file=sys.stderr, flush=True)
        raise SystemExit(1)
    if show:
        warnings.warn(f"acclint: step 0 differs from {reference}\n{verdict}", stacklevel=2)
    return result


class Outcome:
    """What a callback does with step 0: write it to `output`, compare with `reference`."""

    def __init__(self, output: "str | Path", reference: "str | Path | None", on_mismatch: str) -> None:
        self.output = Path(output)
        self.reference = None if reference is None else Path(reference)
        self.on_mismatch = check_on_mismatch(on_mismatch)
        if self.reference is not None and not self.reference.is_file():
            raise FileNotFoundError(f"acclint: the reference fingerprint {self.reference} does not exist")
        self.fingerprint: Any = None
        self.result: ComparisonResult | None = None

    def finish(self, fingerprint: Any) -> None:
        try:
            fingerprint.save(self.output)
        except OSError as error:
            self.fail(OSError(f"cannot write {self.output}: {error.strerror or error}"))
            return
        self.fingerprint = fingerprint
        if self.reference is not None:
            self.result = expect(fingerprint, self.reference, self.on_mismatch, show=fingerprint.rank == 0)

    def fail(self, error: BaseException) -> None:
        """Recording failed: training goes on, with a warning that says why."""
        warnings.warn(f"acclint: step 0 was not recorded: {error}", stacklevel=2)
