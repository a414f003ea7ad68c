"""`transformers.Trainer(..., callbacks=[AcclintCallback(output="gpu.json")])`: step 0 of the Trainer.

The Trainer's own step (gradient accumulation, clipping, mixed precision, accelerate's wrappers)
runs unchanged; the torch global hooks record it (`capture_hooks.torch_observer`) and are gone
after the first optimizer step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from acclint.integrations.torch_callback import TorchStepZero


class AcclintCallback(TrainerCallback):
    def __init__(self, output: "str | Path" = "fingerprint.json", reference: "str | Path | None" = None,
                 on_mismatch: str = "exit") -> None:
        self.step_zero = TorchStepZero(output, reference, on_mismatch)

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        self.step_zero.start(model)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.step_zero.end()

    @property
    def fingerprint(self) -> Any:
        """The recorded fingerprint (None before the first optimizer step)."""
        return self.step_zero.fingerprint
