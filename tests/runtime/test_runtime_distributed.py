"""torch.distributed with 2 processes on gloo (CPU): per-rank fingerprints and rank consistency."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from acclint.runtime import FingerprintError, check_rank_consistency, compare, load

WORKER = Path(__file__).with_name("dist_worker.py")
SRC = Path(__file__).resolve().parents[2] / "src"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def launch(out_dir: Path, world_size: int = 2) -> list[dict]:
    port = free_port()
    processes = []
    for rank in range(world_size):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world_size), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])),
                   OMP_NUM_THREADS="1")
        processes.append(subprocess.Popen([sys.executable, str(WORKER), str(out_dir)], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = []
    for process in processes:
        try:
            outputs.append(process.communicate(timeout=120)[0])
        except subprocess.TimeoutExpired:
            for other in processes:
                other.kill()
            pytest.fail("distributed worker timed out")
    for process, output in zip(processes, outputs):
        assert process.returncode == 0, output
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


def test_one_fingerprint_per_rank(rank_seeded):
    reports, out_dir = rank_seeded
    assert sorted(p.name for p in out_dir.glob("fp*.json")) == ["fp.rank0.json", "fp.rank1.json"]
    rank0, rank1 = load(out_dir / "fp.rank0.json"), load(out_dir / "fp.rank1.json")
    assert (rank0.rank, rank0.world_size, rank1.rank) == (0, 2, 1)
    assert reports[0]["param_names"][0] == "0.weight"  # DDP's "module." prefix is not in the names
    # Replicated weights and all-reduced gradients: the ranks agree although each saw its own batch,
    # so only the per-rank data (and the losses and activations that follow from it) and the per-rank
    # seeds may differ.
    result = compare(rank0, rank1)
    assert result.cause_kinds() <= {"batch", "env"}, result.verdict()
    assert {m.consequence_of for m in result.mismatches if not m.is_cause} <= {"batch", "activation"}
    assert not [m for m in result.mismatches if m.kind == "init-weights"]


def test_consistency_check_needs_an_initialised_process_group(build_torch_net):
    with pytest.raises(FingerprintError, match="not initialized"):
        check_rank_consistency(build_torch_net())
