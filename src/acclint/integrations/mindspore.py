"""`model.train(epochs, dataset, callbacks=[AcclintCallback(output="npu.json")])`: step 0 of MindSpore's Model.train.

MindSpore keeps no gradients where a hook could read them, so at the first step's start the
callback runs `acclint.runtime.capture` on that step's batch: one extra step of the network the
Model trains, rolled back (weights, optimizer state and RNG put back), then Model.train takes
its own step as it would have. The batch comes from the dataset only with
`dataset_sink_mode=False` (in sink mode the steps run on the device, out of the callback's view).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator

from mindspore.train import Callback

from acclint.integrations.parity import Outcome, never_breaks
from acclint.runtime_checks.capture_hooks.mindspore_steps import LaterSteps


class AcclintCallback(Callback):
    """`steps` > 2: the fingerprint also holds the loss and lr of each of the first `steps` steps
    Model.train runs (GRAPH mode too), and is written once they ran (`mindspore_steps`)."""

    def __init__(self, output: "str | Path" = "fingerprint.json", reference: "str | Path | None" = None,
                 on_mismatch: str = "exit", outcome: Any = None, steps: int = 1, ends_with_training: bool = True) -> None:
        super().__init__()
        self.ends_with_training = ends_with_training  # the end of Model.train ends the later steps
        # `outcome`: what to do with the fingerprint, when not the default (acclint capture's own)
        self.outcome = outcome if outcome is not None else Outcome(output, reference, on_mismatch)
        self.steps = steps
        self.done = False
        self.later: LaterSteps | None = None  # step 0 captured, the later steps being recorded

    @never_breaks
    def on_train_step_begin(self, run_context: Any) -> None:
        if not self.done:
            self.done = True
            params = run_context.original_args()
            batch = getattr(params, "train_dataset_element", None)
            if batch is None:
                self.outcome.fail(RuntimeError("Model.train gave no batch to the callback (dataset_sink_mode=True?)"))
                return
            self.later = capture_step(params.network, params.optimizer, params.loss_fn, tuple(batch), self.outcome,
                                      self.steps)
        if self.later is not None:
            self.later.before()

    @never_breaks
    def on_train_step_end(self, run_context: Any) -> None:
        if self.later is not None:
            self.later.after(getattr(run_context.original_args(), "net_outputs", None))

    @never_breaks
    def on_train_end(self, run_context: Any) -> None:
        if self.later is not None and self.ends_with_training:
            self.later.end()
        if not self.done:
            self.done = True
            self.outcome.fail(RuntimeError("training ended before the first step (dataset_sink_mode=True?)"))

    def stop_watching(self) -> None:
        self.done = True
        if self.later is not None:
            self.later.done = True

    @property
    def fingerprint(self) -> Any:
        return self.outcome.fingerprint


def capture_step(network: Any, optimizer: Any, loss_cell: Any, batch: tuple, outcome: Any,
                 steps: int = 1) -> LaterSteps | None:
    """capture() of the step about to run, handed to `outcome` (its failure too: training goes on);
    with `steps` > 2, handed on once the program's own first `steps` steps are recorded: the
    `LaterSteps` the caller feeds each step to."""
    from acclint.runtime_checks.capture.capture import capture

    try:
        with pynative_for_the_capture() as graph_mode:
            fingerprint = capture(network, optimizer, _loss_of(loss_cell), batch)
        if graph_mode:
            fingerprint.env.setdefault("settings", {})["mindspore-mode"] = GRAPH_MODE_NOTE
    except Exception as error:
        outcome.fail(error)
        return None
    if steps > 2:
        return LaterSteps(fingerprint, optimizer, steps, outcome)
    outcome.finish(fingerprint)
    return None


# What a fingerprint of a GRAPH-mode program says about itself (env.settings["mindspore-mode"]).
GRAPH_MODE_NOTE = "GRAPH (step 0 captured in PyNative: graph mode allows no hook in the compiled step)"


@contextlib.contextmanager
def pynative_for_the_capture() -> Iterator[bool]:
    """The captured step runs in PyNative mode: in GRAPH mode MindSpore compiles the step and forbids
    Python hooks (value_and_grad of a lambda, forward hooks) in it. The program's own steps then run
    in the mode it chose. Yields whether the program runs in GRAPH mode."""
    import mindspore

    mode = mindspore.get_context("mode")
    graph = mode == mindspore.GRAPH_MODE
    if graph:
        mindspore.set_context(mode=mindspore.PYNATIVE_MODE)
    try:
        yield graph
    finally:
        if graph:
            mindspore.set_context(mode=mode)


def _loss_of(loss_cell: Any) -> Any:
    """loss_fn(network, batch) as Model.train computes it: network(*data) then the loss on the
    label (the batch's last element), or the network itself when it returns the loss."""
    if loss_cell is None:
        return lambda network, batch: network(*batch)
    return lambda network, batch: loss_cell(network(*batch[:-1]), batch[-1])
