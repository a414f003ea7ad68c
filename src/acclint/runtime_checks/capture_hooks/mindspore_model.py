"""MindSpore under `acclint capture`: Model.train gets acclint's callback, and a loop of the user's
own around `nn.TrainOneStepCell` (or a subclass: the loss-scale cells) is captured at its first call.

Both run `acclint.runtime.capture` on the first step's batch (one extra step, rolled back) before
the program's own step. A loop around `value_and_grad` and an optimizer call has no place where
MindSpore lets a hook see the step: such a program needs `acclint.runtime.Probe`.
"""

from __future__ import annotations

import functools
from typing import Any


def patch_model_train(mindspore: Any, session: Any) -> None:
    from mindspore import nn
    from mindspore.train import Model

    from acclint.integrations.mindspore import AcclintCallback, capture_step

    train = Model.train

    @functools.wraps(train)
    def train_with_acclint(self: Any, epoch: Any, train_dataset: Any, callbacks: Any = None, *args: Any,
                           **kwargs: Any) -> Any:
        if session.written:  # step 0 is recorded: later calls run as written
            return train(self, epoch, train_dataset, callbacks, *args, **kwargs)
        extra = AcclintCallback(outcome=session)
        listed = [] if callbacks is None else list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks]
        return train(self, epoch, train_dataset, [*listed, extra], *args, **kwargs)

    Model.train = train_with_acclint
    step_cell = nn.TrainOneStepCell
    call = step_cell.__call__

    @functools.wraps(call)
    def first_step_captured(self: Any, *inputs: Any, **kwargs: Any) -> Any:
        if not session.written:
            network, loss = _unwrap_loss_cell(self.network)
            capture_step(network, self.optimizer, loss, inputs, session)
        return call(self, *inputs, **kwargs)

    step_cell.__call__ = first_step_captured


def _unwrap_loss_cell(network: Any) -> tuple[Any, Any]:
    """(the user's network, its loss cell) from nn.WithLossCell, so names are the network's own;
    any other cell is the network that returns the loss."""
    backbone, loss = getattr(network, "_backbone", None), getattr(network, "_loss_fn", None)
    if backbone is not None and loss is not None:
        return backbone, loss
    return network, None
