"""MindSpore under `acclint capture`: every Model.train call gets acclint's callback.

A loop of the user's own around TrainOneStepCell or value_and_grad has no place where MindSpore
lets a hook see the gradients; such a program needs `acclint.runtime.Probe` (one line per step).
"""

from __future__ import annotations

import functools
from typing import Any


def patch_model_train(mindspore: Any, session: Any) -> None:
    from mindspore.train import Model

    from acclint.integrations.mindspore import AcclintCallback

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
