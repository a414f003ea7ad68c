"""One rank of the 2-process gloo test (run by test_runtime_distributed.py, not collected by pytest).

usage: python dist_worker.py OUT_DIR    (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in the environment)
First every rank seeds 0 (consistent); then rank r seeds r (the classic multi-card bug), which
DistributedDataParallel's initial broadcast repairs; then each rank captures its fingerprint.
"""

import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from acclint.runtime import capture, check_rank_consistency


def build(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def main() -> None:
    out_dir = Path(sys.argv[1])
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    same = check_rank_consistency(build(0))
    model = build(rank)
    before = check_rank_consistency(model)
    ddp = DistributedDataParallel(model)  # broadcasts rank 0's parameters and buffers
    after = check_rank_consistency(ddp)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(100 + rank)  # each rank its own shard of data
    batch = (torch.randn(16, 4, generator=generator), torch.randn(16, 2, generator=generator))
    fingerprint = capture(ddp, optimizer, lambda m, b: torch.nn.functional.mse_loss(m(b[0]), b[1]), batch)
    written = fingerprint.save(out_dir / "fp.json")
    report = {
        "same_ok": same.ok,
        "same_checked": same.checked,
        "same_seeds": same.seeds,
        "same_verdict": same.verdict(),
        "before_ok": before.ok,
        "before_differing": [m.name for m in before.mismatches],
        "before_verdict": before.verdict(),
        "after_ok": after.ok,
        "checked": after.checked,
        "seeds": after.seeds,
        "written": str(written),
        "world_size": fingerprint.world_size,
        "param_names": [p.name for p in fingerprint.params],
    }
    (out_dir / f"report{rank}.json").write_text(json.dumps(report))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    # Everything this rank reports is written and the process group is destroyed. gloo's threads can
    # still abort the interpreter's own teardown ("terminate called without an active exception", a
    # torch issue seen once in many runs on a loaded 2-core machine), which would fail the test for
    # nothing acclint did: leave without running that teardown.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
