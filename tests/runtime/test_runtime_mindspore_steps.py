"""`--steps N` on MindSpore 2.10 (CPU, a tiny net): the loss and lr of the program's own first N steps,
through Model.train and a loop around nn.TrainOneStepCell, in PyNative and GRAPH mode; a run that ends
first says how many steps it holds; the callback records them too."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_runtime_capture_command import capture

from acclint.runtime import compare, load

SCRIPT = Path(__file__).with_name("ms_model_train.py")


def captured(tmp_path, name, *args, steps="4"):
    path = tmp_path / f"{name}.json"
    run = capture(tmp_path, "-o", str(path), "--steps", steps, "--", sys.executable, str(SCRIPT), "0.01", *args)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    return load(path)


def stage(result, name):
    return next(o for o in result.stages if o.stage == name)


@pytest.mark.parametrize("how", ["model", "loop"])
def test_later_steps_in_pynative_and_graph_mode(ms, tmp_path, how):
    pynative = captured(tmp_path, "p", how, "pynative")
    graph = captured(tmp_path, "g", how, "graph")
    for fingerprint in (pynative, graph):
        step = fingerprint.step
        assert len(step.losses) == 4 and step.steps_unrecorded is None
        assert step.losses[0] == pytest.approx(step.loss)  # the program's own step 0 is the captured one
        assert len(set(step.losses)) == 4  # four steps on four batches
        assert step.lrs == [[pytest.approx(0.01)]] * 4
    result = compare(pynative, graph)
    assert result.ok, result.verdict()
    later = stage(result, "steps")
    assert later.compared_fully and later.summary.startswith("loss and lr of 4 steps")


def test_a_later_lr_difference_is_named_in_graph_mode(ms, tmp_path):
    constant = captured(tmp_path, "c", "loop", "graph")
    decaying = captured(tmp_path, "d", "loop", "graph", "decay")  # the lr halves from step 2 on
    assert decaying.step.lrs[1] == [pytest.approx(0.01)] and decaying.step.lrs[2] == [pytest.approx(0.005)]
    result = compare(constant, decaying)
    found = {m.name: m for m in stage(result, "steps").mismatches}
    assert "the lr first differs at step 2: 0.01 on the left, 0.005 on the right (steps 0-1 the same)" in \
        found["lr-step-2"].message, result.verdict()
    # the schedule itself (a per-step list on the right) is the optimizer's difference the steps follow from
    assert result.causes[0].stage == "optimizer"


def test_a_run_shorter_than_n_steps_says_so(ms, tmp_path):
    """8 steps (2 epochs of 4 batches) against --steps 12: the 8 recorded, and why not 12."""
    short = captured(tmp_path, "s", "model", "graph", steps="12")
    assert len(short.step.losses) == 8
    assert short.step.steps_unrecorded == "the training ended after 8 of the 12 steps asked for"
    other = captured(tmp_path, "o", "loop", "pynative")
    later = stage(compare(other, short), "steps")
    assert "4 vs 8 steps recorded" in later.summary
    assert "right: the training ended after 8 of the 12 steps asked for" in later.summary


def test_the_callback_records_later_steps_and_what_it_could_not(ms, tmp_path):
    import numpy as np
    from mindspore import nn

    from acclint.integrations.mindspore import AcclintCallback
    from acclint.integrations.parity import Outcome
    from acclint.runtime_checks.capture_hooks.mindspore_steps import LaterSteps

    net = nn.SequentialCell([nn.Dense(4, 8), nn.ReLU(), nn.Dense(8, 1)])
    data = ms.dataset.NumpySlicesDataset(
        {"x": np.ones((12, 4), "float32"), "y": np.zeros((12, 1), "float32")},
        shuffle=False).batch(4)
    model = ms.train.Model(net, loss_fn=nn.MSELoss(), optimizer=nn.SGD(net.trainable_params(), learning_rate=0.1))
    callback = AcclintCallback(output=tmp_path / "cb.json", steps=3)
    model.train(1, data, callbacks=[callback], dataset_sink_mode=False)
    step = load(tmp_path / "cb.json").step
    assert len(step.losses) == 3 and step.losses[0] == pytest.approx(step.loss)
    assert step.losses[2] < step.losses[0]  # the same batch each step, the loss going down
    # a train cell whose output is no scalar loss: the steps from there on are said not recorded
    fingerprint = load(tmp_path / "cb.json")
    later = LaterSteps(fingerprint, model._optimizer, 3, Outcome(tmp_path / "no-loss.json", None, "exit"))
    later.before()
    later.after(ms.Tensor([[1.0, 2.0]]))
    written = load(tmp_path / "no-loss.json").step
    assert written.steps_unrecorded.startswith("step 0 returned no scalar loss (Tensor)")
    result = compare(load(tmp_path / "no-loss.json"), fingerprint)
    assert "left: step 0 returned no scalar loss" in stage(result, "steps").skipped
