"""The Probe the hooks fill: gradient norms read when the step begins, the forward stage added."""

from __future__ import annotations

from typing import Any

from acclint.runtime_checks.capture.probe import Probe


class StepProbe(Probe):
    """A Probe whose gradient norms are read when the optimizer step begins, not at record():
    an optimizer may change .grad in place during its step."""

    _taken: "dict[str, float | None]"

    def take_gradients(self, before_clipping: "dict[int, float] | None" = None) -> None:
        """The gradient norms now; `before_clipping` (parameter key -> norm, read when the loop
        clipped) replaces those of the parameters it holds: trainers log the norm before clipping."""
        self._taken = super()._grad_norms(None)
        if before_clipping:
            by_name = {item.name: self._adapter.key(item.tensor) for item in self._params}
            self._taken = {name: before_clipping.get(by_name.get(name), norm) for name, norm in self._taken.items()}

    def _grad_norms(self, grads: Any) -> "dict[str, float | None]":
        return self._taken

    def add_forward(self, records: list) -> None:
        self._fingerprint.forward = records  # the forward stage: recorded by the hooks, not by Probe

    def set_extra(self, key: str, value: Any) -> None:
        if self._fingerprint.optimizer is not None:
            self._fingerprint.optimizer.extra[key] = value

    def add_steps(self, losses: list[float], lrs: list[list[float]], unrecorded: str | None = None) -> None:
        """`--steps N`: the loss and every group's lr of each step this process ran (and why not N)."""
        if self._step is not None:
            self._step.losses, self._step.lrs = list(losses), [list(row) for row in lrs[: len(losses)]]
            self._step.steps_unrecorded = unrecorded
