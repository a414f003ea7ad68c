"""The same samples split differently are recognised as a split, not as different data: micro-batch
x accumulation (2+2 against 4, the nanoGPT-style script under `acclint capture`; the Trainer's
gradient_accumulation_steps), and rank x micro-batch (two torchrun ranks against one process)."""

from __future__ import annotations

import sys

import pytest
from rank_launcher import free_port
from test_runtime_capture_command import capture, project, train  # noqa: F401  (the fixture)
from test_runtime_integrations import hf_train

from acclint.runtime import compare, load

NO_EVALUATION = "--eval_iters=0"  # the evaluation at iteration 0 would draw batch_size-dependent samples first


def stage(result, name):
    return next(o for o in result.stages if o.stage == name)


def capture_ok(project, path, *overrides, launcher=(), options=()):  # noqa: F811
    """`acclint capture -o PATH [OPTIONS] -- [LAUNCHER] train.py config/tiny.py OVERRIDES`, loaded."""
    run = capture(project, "-o", str(path), *options, *(("--", *launcher, "train.py", "config/tiny.py", *overrides)
                                                        if launcher else train(*overrides)))
    assert run.returncode == 0, run.stderr
    return load(path)


@pytest.fixture(scope="module")
def two_and_four(project, tmp_path_factory):  # noqa: F811
    """2+2 (accumulated) and 4 of the same samples, captured once for the tests below."""
    folder = tmp_path_factory.mktemp("splits")
    capture_ok(project, folder / "a.json", "--batch_size=2", "--gradient_accumulation_steps=2", NO_EVALUATION)
    capture_ok(project, folder / "b.json", "--batch_size=4", "--gradient_accumulation_steps=1", NO_EVALUATION)
    return folder / "a.json", folder / "b.json"


def test_two_micro_batches_of_2_against_one_of_4(two_and_four):
    result = compare(*map(load, two_and_four))
    # the same samples, each micro-batch's loss scaled by its share: the step itself is the same, so
    # parity, with the split said in the data stage and the forward (other micro-batches) not compared
    assert result.ok, result.verdict()
    data = stage(result, "data")
    assert "the same samples, split differently: 2 micro-batches of 2 on the left, 1 micro-batch of 4 on the " \
           "right" in data.summary
    assert "split differently" in stage(result, "forward").skipped
    assert "not compared: forward" in result.verdict()
    assert not stage(result, "loss").mismatches and not stage(result, "grads").mismatches


def test_a_split_with_another_loss_scaling_is_named_as_the_split(two_and_four, tmp_path):
    """The same samples split, but the loss differs (the micro-batch losses summed, not averaged):
    the split stays the difference the loss follows from."""
    import json

    split, whole = two_and_four
    # the recorded loss of a loop that forgot to divide by the accumulation steps: twice the mean
    data = json.loads(split.read_text())
    data["step"]["loss"] *= 2
    (tmp_path / "a.json").write_text(json.dumps(data))
    result = compare(load(tmp_path / "a.json"), load(whole))
    assert [(m.kind, m.name) for m in stage(result, "data").mismatches] == [("batch", "<split>")]
    assert "fix 'data' (a different split) first" in result.verdict()
    assert stage(result, "loss").mismatches[0].consequence_of == "batch"


def test_two_ranks_against_one_process_with_accumulation(project, tmp_path):  # noqa: F811
    single = capture_ok(project, tmp_path / "s.json", "--batch_size=4", "--gradient_accumulation_steps=2",
                        "--seed=7", NO_EVALUATION)
    ranks = capture_ok(project, tmp_path / "r.json", "--batch_size=4", "--gradient_accumulation_steps=2",
                       "--seed=7", NO_EVALUATION,
                       launcher=(sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                                 "--master_port", str(free_port())))
    result = compare(single, ranks)
    # named as such: in the environment line and under the verdict (not a difference by itself: a
    # tensor-parallel run compares with a single device)
    assert "(1 process on the left, 2 ranks on the right)" in stage(result, "env").summary
    assert "Note: the world size differs (1 process on the left, 2 ranks on the right)" in result.verdict()
    # the ranks' forward is rank 0's share of the batch: against one process it is said not compared
    assert "rank 0's share of a data-parallel batch" in stage(result, "forward").skipped
    data = stage(result, "data")
    # each rank seeds itself (seed + rank): other samples, said per tensor, not called a split
    assert data.mismatches and all(m.name != "<split>" for m in data.mismatches)


def test_transformers_accumulation_against_one_batch(torch, tmp_path):
    from acclint.integrations.transformers import AcclintCallback

    hf_train(tmp_path, AcclintCallback(output=tmp_path / "acc.json"), batch_size=4, accumulation=2)
    hf_train(tmp_path, AcclintCallback(output=tmp_path / "one.json"), batch_size=8, accumulation=1)
    result = compare(load(tmp_path / "acc.json"), load(tmp_path / "one.json"))
    assert result.ok, result.verdict()
    assert "2 micro-batches of 4 on the left, 1 micro-batch of 8 on the right" in stage(result, "data").summary


# ---------------------------------------------------------------------------- one run, two ways
def test_lightning_zero_edit_and_callback_record_the_same_root(torch, tmp_path):
    """`acclint capture` of a Lightning script and the Lightning callback in it: the same model."""
    import os
    import subprocess
    from pathlib import Path

    from rank_launcher import SRC

    script = Path(__file__).with_name("lightning_train.py")
    zero_edit = capture(tmp_path, "-o", str(tmp_path / "z.json"), "--", sys.executable, str(script), "0.01")
    assert zero_edit.returncode == 0, zero_edit.stderr
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, str(script), "0.01", "callback", str(tmp_path / "c.json")], env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    zero, callback = load(tmp_path / "z.json"), load(tmp_path / "c.json")
    assert zero.model == callback.model == "Sequential"
    assert [p.name for p in zero.params] == [p.name for p in callback.params] == ["0.weight", "0.bias", "2.weight",
                                                                                  "2.bias"]
    result = compare(zero, callback)
    assert result.ok, result.verdict()
