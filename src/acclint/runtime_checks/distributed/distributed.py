"""Multi-process runs: replicated-weights consistency across ranks (rank and file naming: `ranks`).

A multi-card run where some rank was not seeded (or seeded with its rank) starts from different
weights on different cards unless something broadcasts them; check_rank_consistency proves
at step 0 that every rank holds the same replicated parameters.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from acclint.runtime_checks.model.errors import FingerprintError
from acclint.runtime_checks.adapters.frameworks import adapter_for
from acclint.runtime_checks.model.mismatch import Mismatch
from acclint.runtime_checks.model.ranks import rank_path, torch_distributed
from acclint.runtime_checks.adapters.records import summarize

__all__ = ["RankConsistency", "check_rank_consistency", "rank_path"]


@dataclass
class RankConsistency:
    """Result of check_rank_consistency (identical on every rank)."""

    rank: int
    world_size: int
    checked: int  # number of tensors compared
    mismatches: list[Mismatch] = field(default_factory=list)
    seeds: list[Any] = field(default_factory=list)  # torch.initial_seed() of each rank

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def verdict(self) -> str:
        if self.ok:
            lines = [f"rank consistency: ok: {self.checked} tensors identical on all {self.world_size} ranks"]
        else:
            lines = [f"rank consistency: MISMATCH: {len(self.mismatches)} of {self.checked} tensors differ across ranks"]
            lines += [f"  - {m.name}: {m.message}" for m in self.mismatches[:20]]
            if len(self.mismatches) > 20:
                lines.append(f"  ... and {len(self.mismatches) - 20} more")
        if len(set(map(str, self.seeds))) > 1:
            lines.append(f"note: the ranks were seeded differently: {self.seeds}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.verdict()


def check_rank_consistency(
    model: Any, group: Any = None, include: "Callable[[str], bool] | Iterable[str] | None" = None
) -> RankConsistency:
    """Prove that the model's parameters and running statistics are identical on every rank.

    Collective: every rank of `group` must call it. `include` limits the check to replicated
    tensors (a predicate on the common name, or glob patterns) when some are sharded on purpose,
    e.g. tensor-parallel weights.
    """
    adapter = adapter_for(model)
    if adapter.framework != "torch":
        raise FingerprintError("check_rank_consistency needs torch.distributed (got a MindSpore model)")
    dist = torch_distributed()
    if dist is None:
        raise FingerprintError("torch.distributed is not initialized: call init_process_group on every rank first")
    selected = _selector(include)
    tensors = [item for item in adapter.named_params() + adapter.named_state() if selected(item.name)]
    local = {item.name: summarize(adapter.to_host(item.tensor))[1] for item in tensors}
    payload = {"rank": dist.get_rank(group), "seed": adapter.torch.initial_seed(), "hashes": local}
    world_size = dist.get_world_size(group)
    gathered: list[Any] = [None] * world_size
    dist.all_gather_object(gathered, payload, group=group)
    gathered.sort(key=lambda item: item["rank"])
    reference = gathered[0]["hashes"]
    mismatches = []
    elsewhere = sorted(set().union(*(g["hashes"] for g in gathered)) - set(local))
    for name in list(local) + elsewhere:
        differing = [g["rank"] for g in gathered[1:] if g["hashes"].get(name) != reference.get(name)]
        if differing:
            mismatches.append(
                Mismatch(
                    kind="init-weights",
                    name=name,
                    left=(reference.get(name) or "missing")[:16],
                    right={g["rank"]: (g["hashes"].get(name) or "missing")[:16] for g in gathered[1:]},
                    message=f"differs from rank 0 on rank(s) {', '.join(map(str, differing))} "
                    "(unseeded or rank-seeded initialisation without a broadcast?)",
                    stage="weights",
                )
            )
    return RankConsistency(
        rank=payload["rank"],
        world_size=world_size,
        checked=len(local),
        mismatches=mismatches,
        seeds=[g["seed"] for g in gathered],
    )


def _selector(include: "Callable[[str], bool] | Iterable[str] | None") -> Callable[[str], bool]:
    if include is None:
        return lambda name: True
    if callable(include):
        return include
    patterns = [include] if isinstance(include, str) else list(include)
    return lambda name: any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
