"""The later steps rank by rank: data-parallel runs record every rank's losses (`rank_losses`).

The later-steps stage compares the loss of the whole batch (the ranks' mean) first. Where both
sides ran the same number of ranks, each rank's own losses are compared too: a rank whose losses
drift while the mean holds sees other samples than its counterpart (a sampler that shares the
data out differently), which the mean alone would hide. Against another world size the ranks
have no counterparts, and the stage says so.
"""

from __future__ import annotations

import math
from typing import Callable

from acclint.runtime_checks.model.fingerprint import Fingerprint
from acclint.runtime_checks.model.mismatch import Mismatch
from acclint.runtime_checks.model.ranks import world_sizes


def first_divergence(left: list[float], right: list[float], close: Callable[[float, float], bool]) -> int | None:
    """The first step whose losses differ beyond tolerance, among the steps both sides recorded."""
    return next((k for k, (a, b) in enumerate(zip(left, right)) if not close(a, b)), None)


def compare_ranks(left: Fingerprint, right: Fingerprint, close: Callable[[float, float], bool],
                  tolerance: str) -> tuple[Mismatch | None, str | None]:
    """(the first rank whose own losses diverge, or None; what the stage says about the ranks, or None
    when neither side has several)."""
    ls, rs = left.step, right.step
    mine, theirs = ls.rank_losses, rs.rank_losses
    if not mine and not theirs:
        return None, None
    if not mine or not theirs or len(mine) != len(theirs):
        return None, (f"each rank's losses not compared ({world_sizes(left, right)}): the mean over the ranks "
                      "is compared")
    for rank, (a, b) in enumerate(zip(mine, theirs)):
        k = first_divergence(a, b, close)
        if k is None:
            continue
        x, y = a[k], b[k]
        rel = abs(x - y) / max(abs(x), abs(y)) if max(abs(x), abs(y)) else math.inf
        return Mismatch(
            "loss", f"rank-{rank}-loss-step-{k}", x, y,
            f"rank {rank}'s loss first diverges at step {k}: {x:.8g} vs {y:.8g} (relative difference {rel:.2e}, "
            f"beyond {tolerance}): that rank's share of the samples differs (the sampler, its seed or the "
            "rank's data shard)",
        ), None
    return None, f"each of the {len(mine)} ranks' losses compared"
