"""`lightning.Trainer(..., callbacks=[AcclintCallback(output="gpu.json")])`: step 0 of a LightningModule.

Lightning's optimizer step takes a closure that runs training_step and backward; the hooks
record inside it (`capture_hooks.torch_observer`). The batch recorded is the one Lightning hands
to training_step (every one of them under gradient accumulation).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lightning.pytorch.callbacks import Callback

from acclint.integrations.torch_callback import TorchStepZero


class AcclintCallback(Callback):
    def __init__(self, output: "str | Path" = "fingerprint.json", reference: "str | Path | None" = None,
                 on_mismatch: str = "exit") -> None:
        self.step_zero = TorchStepZero(output, reference, on_mismatch)

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self.step_zero.start(pl_module)

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        self.step_zero.add_batch(batch)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.step_zero.end()

    @property
    def fingerprint(self) -> Any:
        """The recorded fingerprint (None before the first optimizer step)."""
        return self.step_zero.fingerprint
