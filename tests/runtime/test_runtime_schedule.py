"""The learning-rate schedule: a warmup must not hide a different peak, and `--steps N` names the
first step whose lr or loss differs. Real programs, unmodified: the nanoGPT-style script under
`acclint capture`, and transformers.Trainer with its warmup."""

from __future__ import annotations

import pytest
from test_runtime_capture_command import capture, project, train  # noqa: F401  (the fixture)
from test_runtime_integrations import hf_train

from acclint.runtime import compare, load


def stage(result, name):
    return next(o for o in result.stages if o.stage == name)


@pytest.fixture(scope="module")
def warm(project, tmp_path_factory):  # noqa: F811
    """Four steps of a warmup over three iterations to a peak of 1e-3."""
    path = tmp_path_factory.mktemp("warm") / "peak-1e-3.json"
    run = capture(project, "-o", str(path), "--steps", "4", *train("--warmup_iters=3"))
    assert run.returncode == 0, run.stderr
    return path


def test_the_schedule_is_recorded(warm):
    fingerprint = load(warm)
    group = fingerprint.optimizer.groups[0].hparams
    assert group["lr"] == 0.0 and group["peak-lr"] == 1e-3  # step 0 of the warmup, and the peak it climbs to
    assert fingerprint.optimizer.extra["lr-schedule"] == "LambdaLR"
    assert fingerprint.optimizer.extra["warmup-steps"] == 3  # read from the lambda's multiplier
    step = fingerprint.step
    assert len(step.losses) == 4 and step.losses[0] == pytest.approx(step.loss)
    assert [row[0] for row in step.lrs] == pytest.approx([0.0, 1e-3 / 3, 2e-3 / 3, 1e-3])


def test_a_different_peak_behind_the_warmup_is_an_optimizer_root(project, warm, tmp_path):  # noqa: F811
    run = capture(project, "-o", str(tmp_path / "b.json"), "--steps", "4", *train("--warmup_iters=3",
                                                                                  "--learning_rate=0.01"))
    assert run.returncode == 0, run.stderr
    result = compare(load(warm), load(tmp_path / "b.json"))
    assert not result.ok
    first = result.causes[0]
    assert (first.kind, first.name, first.left, first.right) == ("optimizer-hparam", "peak-lr", 1e-3, 0.01)
    assert "Verdict: MISMATCH" in result.verdict() and "fix 'optimizer' first" in result.verdict()
    # step 0 ran at lr 0 on both sides: its loss and gradients match; later steps follow from the peak
    assert not stage(result, "loss").mismatches and not stage(result, "grads").mismatches
    later = stage(result, "steps").mismatches
    assert [(m.kind, m.name) for m in later][:1] == [("optimizer-hparam", "lr-step-1")]
    assert "the lr first differs at step 1" in later[0].message


def test_the_same_schedule_repeated_is_at_parity_over_every_step(project, warm, tmp_path):  # noqa: F811
    run = capture(project, "-o", str(tmp_path / "c.json"), "--steps", "4", *train("--warmup_iters=3"))
    assert run.returncode == 0, run.stderr
    result = compare(load(warm), load(tmp_path / "c.json"))
    assert result.ok, result.verdict()
    assert "loss and lr of 4 steps" in stage(result, "steps").summary


def test_a_loss_that_drifts_after_step_0_names_the_first_diverging_step(project, warm, tmp_path):  # noqa: F811
    """The seeds' "the first loss matches but later ones drift": same schedule, other later data."""
    run = capture(project, "-o", str(tmp_path / "d.json"), "--steps", "4",
                  *train("--warmup_iters=3", "--eval_interval=1"))  # an evaluation each step draws other batches
    assert run.returncode == 0, run.stderr
    result = compare(load(warm), load(tmp_path / "d.json"))
    later = stage(result, "steps").mismatches
    assert later and (later[0].kind, later[0].name) == ("loss", "loss-step-1")
    assert "the loss first diverges at step 1" in later[0].message and "rtol 0.001" in later[0].message
    assert not stage(result, "loss").mismatches  # step 0 matched
    assert not stage(result, "optimizer").mismatches and not [m for m in later if m.kind == "optimizer-hparam"]


def test_transformers_warmup_with_two_peaks(torch, tmp_path):
    from acclint.integrations.transformers import AcclintCallback

    paths = []
    for lr in (1e-3, 1e-2):
        path = tmp_path / f"{lr}.json"
        hf_train(tmp_path, AcclintCallback(output=path), learning_rate=lr, warmup_steps=2)
        paths.append(path)
    left, right = load(paths[0]), load(paths[1])
    assert left.optimizer.groups[0].hparams["lr"] == right.optimizer.groups[0].hparams["lr"] == 0.0
    assert left.optimizer.extra["warmup-steps"] == 2 and left.optimizer.extra["lr-schedule"] == "LambdaLR"
    result = compare(left, right)
    assert [(m.kind, m.name) for m in result.causes] == [("optimizer-hparam", "peak-lr")]


def test_mindspore_per_step_lr_list_with_two_peaks(ms):
    """mindcv's way: a per-step lr list starting with a warmup; the peak is compared, not step 0's lr."""
    import numpy as np

    from acclint.runtime import capture

    def run(schedule):
        ms.set_seed(0)
        net = ms.nn.SequentialCell([ms.nn.Dense(8, 4), ms.nn.ReLU(), ms.nn.Dense(4, 1)])
        net.set_train()
        optimizer = ms.nn.Adam(net.trainable_params(), learning_rate=schedule)
        batch = (ms.Tensor(np.ones((2, 8), np.float32)), ms.Tensor(np.zeros((2, 1), np.float32)))
        return capture(net, optimizer, lambda n, b: ms.ops.mse_loss(n(b[0]), b[1]), batch)

    low, high = run([0.0, 0.005, 0.01, 0.008]), run([0.0, 0.05, 0.1, 0.08])
    assert low.optimizer.extra == {"lr-schedule": "per-step list", "schedule-steps": 4, "warmup-steps": 2}
    result = compare(low, high)
    assert [(m.kind, m.name) for m in result.causes] == [("optimizer-hparam", "peak-lr")]
    warm = run(ms.nn.WarmUpLR(0.01, 3))
    assert warm.optimizer.extra == {"lr-schedule": "WarmUpLR", "warmup-steps": 3}
    assert warm.optimizer.groups[0].hparams["peak-lr"] == 0.01
