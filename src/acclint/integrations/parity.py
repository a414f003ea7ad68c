"""The in-run parity check the callbacks and `acclint capture` share: `acclint.runtime.expect_parity`,
plus the one line a run prints at parity."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from acclint.runtime_checks.compare.compare import ComparisonResult
from acclint.runtime_checks.compare.expect import ON_MISMATCH, expect_parity


def check_on_mismatch(on_mismatch: str) -> str:
    if on_mismatch not in ON_MISMATCH:
        raise ValueError(f"on_mismatch must be one of {', '.join(ON_MISMATCH)}, got {on_mismatch!r}")
    return on_mismatch


def expect(fingerprint: Any, reference: "str | Path", on_mismatch: str, show: bool = True) -> ComparisonResult:
    """expect_parity(fingerprint, reference, on_mismatch); at parity one line on stderr (when `show`:
    rank 0 of a distributed run)."""
    result = expect_parity(fingerprint, reference, on_mismatch)
    if result is not None and result.ok and show:
        print(f"acclint: step 0 at parity with {reference}", file=sys.stderr, flush=True)
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
