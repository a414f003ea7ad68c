"""Cost of distributed capture on 2 gloo ranks (CPU), against the plain step of the same layout.

Measures, in one run, for an MLP of `--layers` Linear(width, width) layers:
  * single process: plain training step (forward, backward, Adam step) and capture() of it;
  * DDP on 2 ranks: the same, each rank on half the batch;
  * DTensor tensor parallel on 2 ranks (ColwiseParallel / RowwiseParallel pairs): the same.
Each ratio is capture time / plain step time of the same layout in the same run; the
distributed capture adds the exchanges and assembling each sharded tensor on rank 0.

    PYTHONPATH=src python benchmarks/bench_distributed.py               # 8 layers of 1024
    PYTHONPATH=src python benchmarks/bench_distributed.py --layers 2    # quick smoke run

One run (8.4M parameters, batch 64, 2 CPU cores shared with other work, load average ~7, so
only the order of magnitude holds): single process 0.19 s step / 0.46 s capture (2.45x);
DDP 0.52 s / 0.92 s (1.78x); TP=2 0.15 s / 0.47 s (3.19x). The TP capture assembles all
16 sharded tensors on rank 0 and summarises them there, one after the other.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPEATS = 3


def build(torch, layers: int, width: int):  # noqa: ANN001, ANN201
    torch.manual_seed(0)
    modules = []
    for _ in range(layers):
        modules += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*modules)


def measure(torch, model, batch, capture) -> dict:  # noqa: ANN001
    """Median seconds of the plain step and of capture (each after one warm-up)."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def loss_fn(m, b):  # noqa: ANN001, ANN202
        return torch.nn.functional.mse_loss(m(b[0]), b[1])

    def step() -> None:
        optimizer.zero_grad()
        loss_fn(model, batch).backward()
        optimizer.step()

    def timed(run) -> float:  # noqa: ANN001
        run()
        times = []
        for _ in range(REPEATS):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    plain = timed(step)
    captured = timed(lambda: capture(model, optimizer, loss_fn, batch))
    return {"step_s": round(plain, 4), "capture_s": round(captured, 4), "ratio": round(captured / plain, 2)}


def rank_main(args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    from torch.nn.parallel import DistributedDataParallel

    from acclint.runtime import capture

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    inputs = torch.randn(args.batch, args.width, generator=torch.Generator().manual_seed(1))
    batch = (inputs, inputs.flip(0))
    half = tuple(t.chunk(2)[rank] for t in batch)
    results = {"ddp": measure(torch, DistributedDataParallel(build(torch, args.layers, args.width)), half, capture)}
    plan = {str(2 * i): ColwiseParallel() if i % 2 == 0 else RowwiseParallel() for i in range(args.layers)}
    mesh = init_device_mesh("cpu", (2,))
    model = parallelize_module(build(torch, args.layers, args.width), mesh, plan)
    results["tp2"] = measure(torch, model, batch, capture)
    if rank == 0:
        Path(args.out).write_text(json.dumps(results))
    dist.barrier()  # no rank tears the groups down while another still uses them
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank:
        rank_main(args)
        return
    import torch

    from acclint.runtime import capture

    torch.set_num_threads(1)
    inputs = torch.randn(args.batch, args.width, generator=torch.Generator().manual_seed(1))
    results = {"single": measure(torch, build(torch, args.layers, args.width), (inputs, inputs.flip(0)), capture)}
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "ranks.json"
        processes = [
            subprocess.Popen(
                [sys.executable, __file__, "--rank", "--out", str(out), "--layers", str(args.layers),
                 "--width", str(args.width), "--batch", str(args.batch)],
                env=dict(os.environ, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                         OMP_NUM_THREADS="1"),
            )
            for rank in range(2)
        ]
        if any(process.wait(timeout=600) != 0 for process in processes):
            sys.exit("a rank failed")
        results.update(json.loads(out.read_text()))
    params = args.layers * (args.width * args.width + args.width)
    print(json.dumps({"parameters": params, "layers": args.layers, "width": args.width, "batch": args.batch, **results},
                     indent=1))


if __name__ == "__main__":
    main()
