"""`--steps N` on MindSpore: the loss and lr of the program's own first N steps, after step 0's capture.

MindSpore's step, compiled in GRAPH mode too, hands its loss back to Python every step: a train
cell's output (nn.TrainOneStepCell: the loss; the loss-scale cells: (loss, overflow, scale)), which
Model.train passes to its callbacks as `net_outputs`. The lr a step uses is the optimizer's at its
step counter; MindSpore's `get_lr` advances that counter for a dynamic lr, so it is read and the
counter put back. Step 0's fingerprint is handed on once N steps ran, or when the training ends
first (the fingerprint then says how many steps it holds, in `step.steps_unrecorded`). Recording
never stops the program: a step it cannot read ends the recording there, saying why.
"""

from __future__ import annotations

from typing import Any


class LaterSteps:
    """Holds step 0's `fingerprint` until `steps` steps of the program ran, then `outcome.finish`es it."""

    def __init__(self, fingerprint: Any, optimizer: Any, steps: int, outcome: Any) -> None:
        self.fingerprint, self.optimizer, self.steps, self.outcome = fingerprint, optimizer, steps, outcome
        self.losses: list[float] = []
        self.lrs: list[list[float]] = []
        self.done = False

    def before(self) -> None:
        """A step begins: the lr of every group, as the step will use it."""
        if not self.done:
            self._guarded(lambda: self.lrs.append(current_lrs(self.optimizer)))

    def after(self, outputs: Any) -> None:
        """The step returned `outputs`: its loss."""
        if self.done:
            return
        loss = loss_of(outputs)
        if loss is None:
            self.end(f"step {len(self.losses)} returned no scalar loss ({type(outputs).__name__}), so the losses from "
                     "there on were not recorded")
            return
        self.losses.append(loss)
        if len(self.losses) >= self.steps:
            self.end()

    def end(self, why: str | None = None) -> None:
        """Hand the fingerprint on with the steps recorded so far (the training ended, or `why`)."""
        if self.done:
            return
        self.done = True
        step = self.fingerprint.step
        step.losses = self.losses or None
        step.lrs = self.lrs[: len(self.losses)] or None
        if why is None and len(self.losses) < self.steps:
            why = f"the training ended after {len(self.losses)} of the {self.steps} steps asked for"
        step.steps_unrecorded = why
        self.outcome.finish(self.fingerprint)

    def _guarded(self, action: Any) -> None:
        try:
            action()
        except Exception as error:  # recording must not break the step
            self.end(f"recording step {len(self.losses)} failed ({type(error).__name__}: {error}), so the steps from "
                     "there on were not recorded")


def loss_of(outputs: Any) -> float | None:
    """The loss in a train cell's output: the output itself, or the first of a tuple (loss-scale cells)."""
    value = outputs[0] if isinstance(outputs, (tuple, list)) and outputs else outputs
    if not hasattr(value, "asnumpy"):
        return None
    array = value.asnumpy()
    return float(array.reshape(-1)[0]) if array.size == 1 else None


def current_lrs(optimizer: Any) -> list[float]:
    """Each distinct lr of the optimizer at its step counter, in group order, the counter left as it was."""
    groups = getattr(optimizer, "param_groups", None)
    if groups is not None:  # mindspore.experimental.optim: torch-style groups
        values = [group["lr"] for group in groups]
    else:
        counter = getattr(optimizer, "global_step", None)
        saved = None if counter is None else counter.asnumpy().copy()
        lr = optimizer.get_lr()
        if saved is not None and (counter.asnumpy() != saved).any():
            import mindspore

            counter.set_data(mindspore.Tensor(saved))
        values = list(lr) if isinstance(lr, (tuple, list)) else [lr]
    found: list[float] = []
    for value in values:
        number = float(value.asnumpy().reshape(-1)[0]) if hasattr(value, "asnumpy") else float(value)
        if number not in found:
            found.append(number)
    return found
