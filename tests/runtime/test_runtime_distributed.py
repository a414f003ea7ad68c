"""torch.distributed with 2 processes on gloo (CPU): rank consistency, and DDP capture as one fingerprint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rank_launcher import run_ranks

from acclint.runtime import FingerprintError, check_rank_consistency, compare, load

WORKER = Path(__file__).with_name("dist_worker.py")


def launch(out_dir: Path, world_size: int = 2) -> list[dict]:
    for status, output in run_ranks(WORKER, [str(out_dir)], world_size, timeout=120):
        assert status == 0, output
    return [json.loads((out_dir / f"report{rank}.json").read_text()) for rank in range(world_size)]


@pytest.fixture(scope="module")
def rank_seeded(torch, tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("distributed")
    return launch(out_dir), out_dir


def test_same_seed_everywhere_is_consistent(rank_seeded):
    reports, _ = rank_seeded
    for report in reports:
        assert report["same_ok"] is True
        assert report["same_checked"] == 8  # 6 parameters + BatchNorm running mean and var
        assert report["same_seeds"] == [0, 0]
        assert "8 tensors identical on all 2 ranks" in report["same_verdict"]


def test_rank_seeded_initialisation_is_caught_and_ddp_fixes_it(rank_seeded):
    reports, _ = rank_seeded
    for report in reports:
        assert report["before_ok"] is False
        assert set(report["before_differing"]) == {"0.weight", "0.bias", "3.weight", "3.bias"}  # not the BN stats
        assert "differs from rank 0 on rank(s) 1" in report["before_verdict"]
        assert "seeded differently: [0, 1]" in report["before_verdict"]
        assert report["after_ok"] is True  # DistributedDataParallel broadcast rank 0's weights


def test_one_fingerprint_of_the_whole_model(rank_seeded):
    reports, out_dir = rank_seeded
    # Both ranks return the same logical fingerprint; only rank 0 writes it, to the path asked for.
    assert sorted(p.name for p in out_dir.glob("fp*.json")) == ["fp.json"]
    assert reports[0]["written"] == reports[1]["written"] == str(out_dir / "fp.json")
    fingerprint = load(out_dir / "fp.json")
    assert (fingerprint.logical, fingerprint.world_size) == (True, 2)
    assert reports[0]["param_names"][0] == "0.weight"  # DDP's "module." prefix is not in the names
    assert reports[0]["param_names"] == reports[1]["param_names"]
    # The replicas are counted once: the parameters of one model (4*8+8 + 2*8 + 8*2+2).
    assert fingerprint.param_count()[0] == 74
    assert compare(fingerprint, fingerprint).ok


def test_consistency_check_needs_an_initialised_process_group(build_torch_net):
    with pytest.raises(FingerprintError, match="not initialized"):
        check_rank_consistency(build_torch_net())
