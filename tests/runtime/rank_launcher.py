"""Launch a worker script as the ranks of a real torch.distributed job (gloo, free port, time limit)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_ranks(worker: Path, args: list[str], world_size: int = 2, timeout: float = 180) -> list[tuple[int, str]]:
    """(exit status, output) of every rank; the test fails (never hangs) when a rank runs past `timeout`."""
    port = free_port()
    processes = []
    for rank in range(world_size):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1",
                   PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
        processes.append(subprocess.Popen([sys.executable, str(worker), *args], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    results = []
    for process in processes:
        try:
            results.append((process.wait(timeout=timeout), process.stdout.read()))
        except subprocess.TimeoutExpired:
            for other in processes:
                other.kill()
            pytest.fail(f"distributed worker {worker.name} {' '.join(args)} timed out")
    return results
