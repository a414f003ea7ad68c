"""What the transformers and Lightning callbacks share: the torch global hooks around step 0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acclint.integrations.parity import Outcome, never_breaks
from acclint.runtime_checks.capture_hooks.torch_observer import TorchStepObserver


class TorchStepZero:
    def __init__(self, output: "str | Path", reference: "str | Path | None", on_mismatch: str) -> None:
        self.outcome = Outcome(output, reference, on_mismatch)
        self.observer: TorchStepObserver | None = None

    @never_breaks
    def start(self, model: Any) -> None:
        """Hooks on from now until the first optimizer step has ended (`model`: the one trained)."""
        if self.observer is None:
            self.observer = TorchStepObserver(self.outcome.finish, self.outcome.fail, model=model).install()

    @never_breaks
    def add_batch(self, batch: Any) -> None:
        if self.observer is not None:
            self.observer.add_batch(batch)

    @never_breaks
    def end(self) -> None:
        """Training is over: if it never stepped, the hooks go and a warning says so."""
        if self.observer is not None and not self.observer.done:
            self.observer.uninstall()
            self.observer.done = True
            self.outcome.fail(RuntimeError("training ended before the first optimizer step"))

    def stop_watching(self) -> None:
        """After a failure: every hook goes, the run goes on untouched."""
        if self.observer is not None:
            self.observer.done = True
            self.observer.uninstall()

    @property
    def fingerprint(self) -> Any:
        return self.outcome.fingerprint
