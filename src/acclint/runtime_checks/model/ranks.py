"""Which rank this process is, and the file each rank writes (no framework, no adapter imports)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

# MindSpore launchers (msrun, mpirun on Ascend) publish the rank through these variables.
MINDSPORE_RANK_VARIABLES = ("RANK_ID", "RANK_SIZE")


def torch_distributed() -> Any:
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist
    return None


def rank_info(framework: str) -> tuple[int, int]:
    """(rank, world size) of this process; (0, 1) outside a distributed run."""
    if framework == "torch":
        dist = torch_distributed()
        return (dist.get_rank(), dist.get_world_size()) if dist else (0, 1)
    rank_var, size_var = MINDSPORE_RANK_VARIABLES
    try:
        return int(os.environ.get(rank_var, 0)), int(os.environ.get(size_var, 1))
    except ValueError:
        return 0, 1


def rank_path(path: Path, rank: int, world_size: int) -> Path:
    """`path` for this rank: "{rank}" is filled in; otherwise ".rank<N>" goes before the suffix (world size > 1)."""
    if "{rank}" in path.name:
        return path.with_name(path.name.replace("{rank}", str(rank)))
    if world_size <= 1:
        return path
    return path.with_name(f"{path.stem}.rank{rank}{path.suffix}")


def world_sizes(left: Any, right: Any) -> str:
    """"1 process on the left, 2 ranks on the right", of two fingerprints."""
    def said(size: int) -> str:
        return "1 process" if size == 1 else f"{size} ranks"

    return f"{said(left.world_size)} on the left, {said(right.world_size)} on the right"
