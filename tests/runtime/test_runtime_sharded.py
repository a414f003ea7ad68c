"""Distributed capture and Probe: 2 real gloo processes, one logical fingerprint per parallel layout.

Each layout of sharded_models.py is captured on 2 ranks (one launch for the module) and compared
with the same model captured in this process: same seed, same weights, same data, so the
comparison must say parity, and another learning rate must be the only cause reported.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sharded_models as models
from click.testing import CliRunner
from rank_launcher import run_ranks

from acclint.cli import main as cli
from acclint.runtime import Probe, capture, compare, load

WORKER = Path(__file__).with_name("sharded_worker.py")
SCENARIOS = ["tp", "tp-lr", "ddp", "fsdp2", "megatron", "pipeline", "disagree", "no-tp-group", "fails"]


def launch(out_dir: Path, scenarios: list[str]) -> None:
    for status, output in run_ranks(WORKER, [str(out_dir), *scenarios], timeout=240):
        assert status == 0, output


def reports(out_dir: Path, scenario: str) -> list[dict]:
    return [json.loads((out_dir / f"report-{scenario}-{rank}.json").read_text()) for rank in range(2)]


@pytest.fixture(scope="module")
def runs(torch, tmp_path_factory) -> Path:
    out_dir = tmp_path_factory.mktemp("sharded")
    launch(out_dir, SCENARIOS)
    return out_dir


@pytest.fixture(scope="module")
def single(torch, tmp_path_factory) -> Path:
    """The single-process capture of the model every layout splits."""
    model = models.mlp()
    fingerprint = capture(model, torch.optim.Adam(model.parameters(), lr=1e-3), models.loss_fn, models.batch())
    return fingerprint.save(tmp_path_factory.mktemp("single") / "single.json")


def compare_cli(left: Path, right: Path) -> tuple[int, dict]:
    result = CliRunner().invoke(cli, ["compare", str(left), str(right), "--format", "json"])
    return result.exit_code, json.loads(result.output) if result.output.strip().startswith("{") else result.output


# ---------------------------------------------------------------------------- the acceptance case
def test_tensor_parallel_run_is_at_parity_with_the_single_process_run(runs, single):
    status, report = compare_cli(single, runs / "tp.json")
    assert status == 0, report
    assert report["ok"] is True and report["mismatches"] == []


def test_tensor_parallel_run_with_another_lr_reports_only_the_lr(runs, single):
    status, report = compare_cli(single, runs / "tp-lr.json")
    assert status == 1
    causes = [m for m in report["mismatches"] if m.get("consequence_of") is None]
    assert [(m["kind"], m["name"], m["left"], m["right"]) for m in causes] == [("optimizer-hparam", "lr", 0.001, 0.01)]


def test_tensor_parallel_fingerprint_holds_the_full_tensors(runs, single):
    sharded, whole = load(runs / "tp.json"), load(single)
    assert (sharded.logical, sharded.world_size) == (True, 2)
    # Global names and shapes, and the hash of each full tensor equals the single-process hash.
    assert [(p.name, p.shape, p.sha256) for p in sharded.params] == [(p.name, p.shape, p.sha256) for p in whole.params]
    for mine, theirs in zip(sharded.params, whole.params):
        assert mine.stats == pytest.approx(theirs.stats)
    assert sharded.param_count() == whole.param_count() == (220, 220)
    # The column-parallel layer's output is a shard on each rank: left out, not mistaken for the activation.
    recorded = {(a.name, a.io) for a in sharded.forward}
    assert ("0", "output") not in recorded and ("", "output") in recorded


def test_every_rank_gets_the_fingerprint_and_only_rank_0_writes_it(runs):
    rank0, rank1 = reports(runs, "tp")
    assert rank0 == rank1  # same path, loss, names and count on both ranks
    assert not list(runs.glob("*.rank*.json"))


# ---------------------------------------------------------------------------- the other layouts
def test_ddp_counts_replicas_once_joins_the_batch_and_averages_the_loss(runs, single):
    ddp, whole = load(runs / "ddp.json"), load(single)
    assert [p.name for p in ddp.params] == [p.name for p in whole.params]  # no "module." prefix
    assert ddp.param_count() == whole.param_count()
    # Each rank saw half the batch: the mean of the two halves' losses is the full batch's loss.
    assert ddp.step.loss == pytest.approx(whole.step.loss, rel=1e-6)
    # The ranks' halves, joined in rank order, are the batch the single process took.
    assert [(v.path, v.shape, v.sha256, v.samples) for v in ddp.batch] == [
        (v.path, v.shape, v.sha256, v.samples) for v in whole.batch
    ]
    result = compare(whole, ddp)
    assert result.ok, result.verdict()


def test_fsdp2_fully_shard_runs_on_cpu_and_is_at_parity(runs, single):
    result = compare(load(single), load(runs / "fsdp2.json"))
    assert result.ok, result.verdict()


def probed(torch, model, loss_of=models.loss_fn):  # noqa: ANN001, ANN201
    """The single-process Probe fingerprint of the same two steps."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    probe = Probe(model, optimizer)
    models.probe_steps(probe, model, optimizer, loss_of)
    return probe.fingerprint()


def test_megatron_style_layers_through_the_probe(torch, runs):
    sharded = load(runs / "megatron.json")
    assert [p.shape for p in sharded.params] == [[16, 8], [16], [4, 16], [4], [4], [4]]
    result = compare(probed(torch, models.mlp()), sharded)
    assert result.ok, result.verdict()


def test_pipeline_stages_merge_into_the_whole_model(torch, runs):
    single, stages = probed(torch, models.deep(), models.deep_loss), load(runs / "pipeline.json")
    assert [p.name for p in stages.params] == [p.name for p in single.params]  # layers 0-1, then 2-3
    assert [len(g.params) for g in stages.optimizer.groups] == [8]  # both stages' parameters, one group
    assert [r["has_loss"] for r in reports(runs, "pipeline")] == [False, True]
    assert stages.step.loss == pytest.approx(single.step.loss, rel=1e-6)  # the last stage's loss
    result = compare(single, stages)
    assert result.ok, result.verdict()


# ---------------------------------------------------------------------------- bad input
def test_ranks_with_different_models_fail_on_every_rank(runs):
    for report in reports(runs, "disagree"):
        assert report["error"].startswith("ranks 0 and 1 disagree on the model's parameters")
        assert "only rank 1 has 4.bias, 4.weight" in report["error"]


def test_megatron_parameters_without_a_tensor_parallel_group_fail_with_the_fix(runs):
    for report in reports(runs, "no-tp-group"):
        assert report["error"] == (
            "parameter 0.weight is marked tensor_model_parallel, but the tensor-parallel group is unknown: "
            "initialise megatron.core.parallel_state, or pass tensor_parallel_group= to capture / Probe"
        )


def test_a_rank_failing_in_its_step_is_named_on_every_rank(runs):
    rank0, rank1 = reports(runs, "fails")
    assert rank1["error"] == "the captured step failed on rank 1: ValueError: labels out of range on this rank"
    # Rank 0 finished its own step and learnt of rank 1's failure at the exchange, without a timeout.
    assert rank0["error"].startswith("rank 1 failed: ValueError: labels out of range on this rank; rank 0 stopped")


def test_a_rank_that_dies_ends_the_wait_with_an_error(torch, tmp_path):
    statuses = [status for status, _ in run_ranks(WORKER, [str(tmp_path), "dies"], timeout=120)]
    assert statuses == [0, 3]  # the job ends: rank 1 is gone, rank 0 reported and exited
    rank0 = json.loads((tmp_path / "report-dies-0.json").read_text())
    assert rank0["error"].startswith("rank 0 gave up collecting the step after waiting")


def test_a_rank_failing_while_the_others_wait_in_a_collective_of_the_model(torch, tmp_path):
    statuses = [status for status, _ in run_ranks(WORKER, [str(tmp_path), "ddp-fails"], timeout=120)]
    assert statuses == [0, 0]
    rank0, rank1 = reports(tmp_path, "ddp-fails")
    assert rank1["error"] == "the captured step failed on rank 1: ValueError: labels out of range on this rank"
    # Rank 0 was inside DDP's all-reduce when rank 1 left: the store names the cause.
    assert rank0["error"].startswith(
        "rank 1 failed: ValueError: labels out of range on this rank; rank 0 stopped during the captured step"
    )
