"""MindSpore under `acclint capture`: Model.train gets acclint's callback, and a loop of the user's
own around `nn.TrainOneStepCell` (or a subclass: the loss-scale cells) is captured at its first call.

Both run `acclint.runtime.capture` on the first step's batch (one extra step, rolled back) before
the program's own step; with `--steps N` they then record the loss and lr of the program's own
first N steps (`mindspore_steps`), and a program that ends first has its fingerprint written at exit. A loop around `value_and_grad` and an optimizer call has no place where
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
    steps = session.settings.steps
    watching: list[AcclintCallback] = []  # the one callback: a program may call Model.train per epoch

    @functools.wraps(train)
    def train_with_acclint(self: Any, epoch: Any, train_dataset: Any, callbacks: Any = None, *args: Any,
                           **kwargs: Any) -> Any:
        if session.written or (watching and watching[0].later is None and watching[0].done):
            return train(self, epoch, train_dataset, callbacks, *args, **kwargs)  # step 0 is recorded (or failed)
        if not watching:
            # the later steps go on over the program's next Model.train calls, and end at its exit
            watching.append(AcclintCallback(outcome=session, steps=steps, ends_with_training=False))
        listed = [] if callbacks is None else list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks]
        try:
            return train(self, epoch, train_dataset, [*listed, watching[0]], *args, **kwargs)
        finally:
            session.pending = watching[0].later

    Model.train = train_with_acclint
    step_cell = nn.TrainOneStepCell
    call = step_cell.__call__

    @functools.wraps(call)
    def first_step_captured(self: Any, *inputs: Any, **kwargs: Any) -> Any:
        if not session.written and session.pending is None and not watching:
            network, loss = _unwrap_loss_cell(self.network)
            session.pending = capture_step(network, self.optimizer, loss, inputs, session, steps)
        later = session.pending
        if later is None or later.done or watching:  # Model.train's own cell: its callback records the steps
            return call(self, *inputs, **kwargs)
        later.before()
        outputs = call(self, *inputs, **kwargs)
        later.after(outputs)
        return outputs

    step_cell.__call__ = first_step_captured


def _unwrap_loss_cell(network: Any) -> tuple[Any, Any]:
    """(the user's network, its loss cell) from nn.WithLossCell, so names are the network's own;
    any other cell is the network that returns the loss."""
    backbone, loss = getattr(network, "_backbone", None), getattr(network, "_loss_fn", None)
    if backbone is not None and loss is not None:
        return backbone, loss
    return network, None
