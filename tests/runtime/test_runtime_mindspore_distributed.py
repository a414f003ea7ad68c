"""MindSpore data parallel under msrun on CPU (2 real ranks): per-rank files merged into one fingerprint.

MindSpore 2.10 runs data parallel on CPU (msrun, its own collective library); its model
parallel (semi-auto / auto parallel sharding) needs Ascend or GPU devices. Each rank saves its
own file; loading the job's path merges them, and a missing rank's file is an error (exit 2).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from rank_launcher import SRC, free_port

from acclint.cli import main as cli
from acclint.runtime import FingerprintError, Probe, capture, compare, load

WORKER = Path(__file__).with_name("ms_dp_worker.py")


@pytest.fixture(scope="module")
def job(ms, tmp_path_factory) -> Path:
    out_dir = tmp_path_factory.mktemp("msrun")
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    command = [sys.executable, "-m", "mindspore.parallel.cluster.run", "--worker_num=2", "--local_worker_num=2",
               f"--master_port={free_port()}", f"--log_dir={out_dir / 'logs'}", "--join=True", str(WORKER), str(out_dir)]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)
    except subprocess.TimeoutExpired:
        pytest.fail("msrun job timed out")
    logs = "\n".join(p.read_text(errors="replace")[-3000:] for p in sorted((out_dir / "logs").glob("worker_*.log")))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:] + logs
    return out_dir


@pytest.fixture(scope="module")
def worker(ms):
    import ms_dp_worker  # imports MindSpore: only once the ms fixture has it

    return ms_dp_worker


def test_capture_on_every_rank_merges_into_the_full_batch_step(ms, job, worker):
    assert sorted(p.name for p in job.glob("ms-capture*.json")) == ["ms-capture.rank0.json", "ms-capture.rank1.json"]
    merged = load(job / "ms-capture.json")
    assert (merged.logical, merged.world_size, merged.framework) == (True, 2, "mindspore")
    net = worker.network()
    single = capture(net, ms.nn.Adam(net.trainable_params(), learning_rate=1e-3), worker.loss_fn,
                     worker.shard(worker.data(), 0, 1))
    # Each rank stepped on its half with the gradients averaged over both: the full batch's step.
    assert merged.step.grad_norm == pytest.approx(single.step.grad_norm, rel=1e-5)
    assert merged.param_count() == single.param_count()  # replicas counted once
    result = compare(single, merged)
    assert result.ok, result.verdict()


def test_probe_around_a_data_parallel_loop(ms, job, worker):
    net = worker.network()
    optimizer = ms.nn.Adam(net.trainable_params(), learning_rate=1e-3)
    grad_fn = ms.value_and_grad(lambda x, y: ms.ops.mse_loss(net(x), y), None, optimizer.parameters)
    probe = Probe(net, optimizer)
    for step, seed in enumerate((7, 8)):
        loss, grads = grad_fn(*worker.shard(worker.data(seed), 0, 1))
        optimizer(grads)
        probe.record(step, loss, grads=grads if step == 0 else None)
    result = compare(probe.fingerprint(), load(job / "ms-probe.json"))
    assert result.ok, result.verdict()


def test_a_missing_rank_file_is_an_error_with_exit_2(job, tmp_path):
    shutil.copy(job / "ms-capture.rank0.json", tmp_path / "npu.rank0.json")
    with pytest.raises(FingerprintError, match=r"2 ranks but the part\(s\) of rank\(s\) 1 are missing \(npu.rank1.json\)"):
        load(tmp_path / "npu.json")
    result = CliRunner().invoke(cli, ["compare", str(job / "ms-capture.json"), str(tmp_path / "npu.json")])
    assert result.exit_code == 2
    assert "rank(s) 1 are missing (npu.rank1.json)" in result.output
    assert "Traceback" not in result.output


def test_replicas_that_differ_are_an_error(job, tmp_path):
    for rank in range(2):
        data = json.loads((job / f"ms-capture.rank{rank}.json").read_text())
        if rank == 1:
            data["params"][0]["sha256"] = "0" * 64  # rank 1 started from other weights
        (tmp_path / f"npu.rank{rank}.json").write_text(json.dumps(data))
    with pytest.raises(FingerprintError, match="holds other values on rank 1 than on rank 0"):
        load(tmp_path / "npu.json")


def test_rank_files_disagreeing_on_the_model_are_an_error_with_exit_2(job, tmp_path):
    for rank in range(2):
        data = json.loads((job / f"ms-capture.rank{rank}.json").read_text())
        if rank == 1:
            data["params"] = data["params"][:-1]  # rank 1 lost a parameter
        (tmp_path / f"npu.rank{rank}.json").write_text(json.dumps(data))
    result = CliRunner().invoke(cli, ["compare", str(job / "ms-capture.json"), str(tmp_path / "npu.json")])
    assert result.exit_code == 2
    assert "ranks 0 and 1 disagree on the model's parameters (only rank 0 has" in result.output
    assert "Traceback" not in result.output
