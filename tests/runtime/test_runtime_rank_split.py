"""Rank x micro-batch: two torchrun ranks (gloo, CPU) of 2 micro-batches of 2 each against one process
with a batch of 8, the same samples shared out by a DistributedSampler, under `acclint capture
--steps 4`: parity, with the split said; a real difference (the lr, other samples) still named; and
every rank's losses of the later steps recorded and compared rank by rank."""

from __future__ import annotations

import json
import sys

import pytest
from rank_launcher import free_port
from test_runtime_capture_command import project  # noqa: F401  (the fixture)
from test_runtime_splits import capture_ok, stage

from acclint.runtime import compare, load

# the samples shared out by a DistributedSampler; no evaluation at iteration 0 (rank 0 alone runs it)
SHARED = ("--sampler=distributed", "--eval_iters=0")
STEPS = ("--steps", "4")


def ranks() -> tuple[str, ...]:
    return (sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port",
            str(free_port()))


@pytest.fixture(scope="module")
def runs(project, tmp_path_factory):  # noqa: F811
    folder = tmp_path_factory.mktemp("rank_split")

    def run(name, *overrides, launcher=()):
        return capture_ok(project, folder / f"{name}.json", *overrides, *SHARED, launcher=launcher, options=STEPS)

    return {
        "one": run("one", "--batch_size=8", "--gradient_accumulation_steps=1"),
        "one_accumulating": run("one_accumulating", "--batch_size=2", "--gradient_accumulation_steps=4"),
        # 4 micro-batch steps over 2 ranks: 2 micro-batches of 2 on each rank
        "ranks": run("ranks", "--batch_size=2", "--gradient_accumulation_steps=4", launcher=ranks()),
        "ranks_lr": run("ranks_lr", "--batch_size=2", "--gradient_accumulation_steps=4", "--learning_rate=0.002",
                        launcher=ranks()),
    }


def test_the_same_samples_over_ranks_and_micro_batches_compare_at_parity(runs):
    result = compare(runs["one"], runs["ranks"])
    assert result.ok, result.verdict()
    assert ("the same samples, split differently: 1 micro-batch of 8 on the left, 2 ranks x 2 micro-batches of 2 "
            "on the right") in stage(result, "data").summary
    # rank 0's forward is its share of the batch: said not compared, and the parity line says so too
    assert "rank 0's share" in stage(result, "forward").skipped
    assert "not compared: forward" in result.verdict()
    later = stage(result, "steps")
    assert later.compared_fully and "loss and lr of 4 steps" in later.summary
    assert "each rank's losses not compared (1 process on the left, 2 ranks on the right)" in later.summary


def test_four_micro_batches_against_two_ranks_of_two(runs):
    result = compare(runs["one_accumulating"], runs["ranks"])
    assert result.ok, result.verdict()
    assert ("4 micro-batches of 2 on the left, 2 ranks x 2 micro-batches of 2 on the right"
            in stage(result, "data").summary)
    assert stage(result, "steps").compared_fully


def test_a_different_lr_over_the_same_split_is_named(runs):
    result = compare(runs["one"], runs["ranks_lr"])
    assert not result.ok
    first = result.causes[0]
    assert (first.stage, first.kind) == ("optimizer", "optimizer-hparam"), result.verdict()
    assert "fix 'optimizer' first" in result.verdict()
    assert not stage(result, "data").mismatches  # the data are not blamed


def test_every_rank_records_its_later_losses(runs):
    step = runs["ranks"].step
    assert len(step.rank_losses) == 2 and all(len(losses) == 4 for losses in step.rank_losses)
    assert step.rank_losses[0] != step.rank_losses[1]  # each rank its own share of the samples
    assert step.losses == pytest.approx([(a + b) / 2 for a, b in zip(*step.rank_losses)])
    assert step.steps_unrecorded is None


def test_ranks_compare_rank_by_rank(runs, tmp_path):
    same = compare(runs["ranks"], runs["ranks"])
    assert same.ok and "each of the 2 ranks' losses compared" in stage(same, "steps").summary
    # the ranks' shares swapped: the mean holds, each rank's own losses do not
    data = json.loads(open(runs["ranks"].path).read())
    data["step"]["rank_losses"].reverse()
    (tmp_path / "swapped.json").write_text(json.dumps(data))
    result = compare(runs["ranks"], load(tmp_path / "swapped.json"))
    found = stage(result, "steps").mismatches
    assert [(m.kind, m.name) for m in found] == [("loss", "rank-0-loss-step-0")], result.verdict()
    assert "rank 0's loss first diverges at step 0" in found[0].message
    assert "fix 'later steps' first" in result.verdict()


def test_other_samples_on_the_ranks_are_named_as_data(project, runs, tmp_path):  # noqa: F811
    """Each rank drawing windows of its own (nanoGPT's seed + rank): other samples, not a split."""
    other = capture_ok(project, tmp_path / "r.json", "--batch_size=2", "--gradient_accumulation_steps=4",
                       "--eval_iters=0", launcher=ranks())
    result = compare(runs["one"], other)
    data = stage(result, "data").mismatches
    assert data and all(m.name != "<split>" for m in data)
    assert result.causes[0].stage == "data", result.verdict()
