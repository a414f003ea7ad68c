"""The in-run parity check the callbacks and `acclint capture` share: `acclint.runtime.expect_parity`,
plus the one line a run prints at parity."""

from __future__ import annotations

import functools
import sys
import warnings
from pathlib import Path
from typing import Any, Callable, TypeVar

from acclint.runtime_checks.compare.compare import ComparisonResult
from acclint.runtime_checks.compare.expect import ON_MISMATCH, ParityError, expect_parity

Hook = TypeVar("Hook", bound=Callable[..., Any])


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
            try:
                self.result = expect(fingerprint, self.reference, self.on_mismatch, show=fingerprint.rank == 0)
            except (ParityError, SystemExit):
                raise  # what on_mismatch asked for
            except Exception as error:  # comparing failed: the run goes on, saying so
                self.fail(error, "step 0 was recorded but not compared")

    def fail(self, error: BaseException, what: str = "step 0 was not recorded") -> None:
        """Recording failed: training goes on, with one warning that says why."""
        cause = str(error) or type(error).__name__
        warnings.warn(f"acclint: {what}: {cause}", RecordingWarning, stacklevel=2)


class RecordingWarning(UserWarning):
    """acclint could not record (or compare) step 0; the training it watched went on."""


def never_breaks(hook: Hook) -> Hook:
    """A callback method whose failure becomes one RecordingWarning (through `self.outcome`), never
    an exception in the trainer: only what `on_mismatch` asks for (exit, raise) leaves it."""

    @functools.wraps(hook)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return hook(self, *args, **kwargs)
        except (ParityError, SystemExit):
            raise
        except Exception as error:
            self.outcome.fail(error if str(error) else RuntimeError(f"{type(error).__name__} in {hook.__name__}"))
            self.stop_watching()
            return None

    return guarded  # type: ignore[return-value]
