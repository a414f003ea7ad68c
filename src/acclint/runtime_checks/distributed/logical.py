"""One logical fingerprint from the parts every rank recorded (framework-neutral, no communication).

Each rank contributes a `RankPart`: where its tensors sit in the logical ones (`Block`s) and its
own fingerprint of everything else (optimizer groups, module settings, batch, activations, step
numbers). `plan` checks that the parts describe one model and picks, for every logical tensor,
one copy of each distinct block (data-parallel replicas hold equal blocks: counted once);
`merge` builds the fingerprint a single process holding the whole model would have recorded:

* parameters and state: global names and shapes, statistics and hash of the full tensor (given
  by the caller, computed from the full tensor assembled block by block);
* gradient and update norms: root sum of squares of the distinct blocks' norms;
* loss: from the ranks that have one (the last pipeline stage), averaged over data-parallel
  replicas; optimizer groups: each group's parameters from every stage;
* module settings from whichever rank holds the module; activations and the batch only where
  every rank that recorded them agrees (a tensor-parallel shard of an activation is not the
  activation, and data-parallel ranks see different samples).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable

import numpy as np

from acclint.runtime_checks.model.errors import FingerprintError
from acclint.runtime_checks.model.fingerprint import (
    ActivationRecord,
    Fingerprint,
    OptimizerGroup,
    OptimizerRecord,
    StepRecord,
    TensorRecord,
)
from acclint.runtime_checks.model.sharding import Piece

# Names listed in a message at most.
SHOWN = 5


@dataclass
class Block:
    """One rank's tensor: its names and where its values sit in the logical tensor."""

    name: str
    native_name: str
    module: str
    trainable: bool
    dtype: str
    piece: Piece
    shared: bool = False  # held by several pipeline stages on purpose (Megatron tied embeddings)

    @property
    def key(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return self.piece.offset, self.piece.shape


@dataclass
class RankPart:
    """What one rank recorded: its blocks, and its own fingerprint without tensor records."""

    rank: int
    params: list[Block]
    state: list[Block]
    fingerprint: Fingerprint


@dataclass
class Logical:
    """One logical tensor and the (rank, block) pairs that make it up, one per distinct block."""

    kind: str  # "params" or "state"
    block: Block  # the first rank's block (names, dtype, global shape)
    sources: list[tuple[int, Block]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.block.name

    @property
    def global_shape(self) -> tuple[int, ...]:
        return self.block.piece.global_shape


def plan(parts: list[RankPart]) -> list[Logical]:
    """The logical tensors in model order (rank by rank), checked for one consistent model."""
    _check_same_model(parts)
    logical: dict[tuple[str, str], Logical] = {}
    for part in sorted(parts, key=lambda p: p.rank):
        for kind, blocks in (("params", part.params), ("state", part.state)):
            for block in blocks:
                entry = logical.setdefault((kind, block.name), Logical(kind, block))
                first = entry.block.piece
                if block.piece.global_shape != first.global_shape:
                    raise FingerprintError(
                        f"{block.name} has shape {list(first.global_shape)} on rank {entry.sources[0][0]} "
                        f"and {list(block.piece.global_shape)} on rank {part.rank}: the ranks built different models"
                    )
                if all(block.key != known.key for _, known in entry.sources):
                    entry.sources.append((part.rank, block))
    for entry in logical.values():
        _check_covered(entry, len(parts))
    return list(logical.values())


def _check_same_model(parts: list[RankPart]) -> None:
    """Ranks of one pipeline stage hold the same parameters; different stages hold disjoint ones."""
    sets = {p.rank: {b.name for b in p.params if not b.shared} for p in parts}
    ranks = sorted(sets)
    for i, a in enumerate(ranks):
        for b in ranks[i + 1 :]:
            mine, theirs = sets[a], sets[b]
            if mine == theirs or not mine & theirs:
                continue
            only_a, only_b = sorted(mine - theirs), sorted(theirs - mine)
            parts_text = []
            if only_a:
                parts_text.append(f"only rank {a} has {_listed(only_a)}")
            if only_b:
                parts_text.append(f"only rank {b} has {_listed(only_b)}")
            raise FingerprintError(
                f"ranks {a} and {b} disagree on the model's parameters ({'; '.join(parts_text)}): they share "
                f"{len(mine & theirs)} parameter(s), so they are not two pipeline stages; build the same model on every rank"
            )


def _check_covered(entry: Logical, world_size: int) -> None:
    total = math.prod(entry.global_shape)
    held = sum(block.piece.numel for _, block in entry.sources)
    if held != total:
        ranks = sorted({rank for rank, _ in entry.sources})
        raise FingerprintError(
            f"the blocks of {entry.name} {list(entry.global_shape)} held by rank(s) {ranks} cover {held:,} of "
            f"{total:,} elements: some ranks' parts are missing (capture must run on all {world_size} ranks "
            "of the job, or every rank's part file must be given)"
        )


def assemble(global_shape: Iterable[int], blocks: Iterable[tuple[Piece, np.ndarray]]) -> np.ndarray:
    """The full tensor from its blocks, in the canonical (unsharded, C-contiguous) layout."""
    full: np.ndarray | None = None
    for piece, array in blocks:
        if full is None:
            full = np.empty(tuple(global_shape), dtype=array.dtype)
        where = tuple(slice(start, start + size) for start, size in zip(piece.offset, piece.shape))
        full[where] = array.reshape(piece.shape)
    if full is None:
        raise FingerprintError("no blocks to assemble")
    return full


# env.settings key of a data-parallel fingerprint whose forward is rank 0's view (its share of the batch).
FORWARD_VIEW, RANK_ZERO_VIEW = "forward-view", "rank 0 (its share of the batch)"


def merge(parts: list[RankPart], logical: list[Logical], record: Callable[[Logical], TensorRecord], rank: int) -> Fingerprint:
    """The logical fingerprint; `record` gives the full tensor's record of each logical tensor."""
    parts = sorted(parts, key=lambda p: p.rank)
    first = parts[0].fingerprint
    fps = [p.fingerprint for p in parts]
    params = [_global_record(record(entry), entry) for entry in logical if entry.kind == "params"]
    state = [_global_record(record(entry), entry) for entry in logical if entry.kind == "state"]
    forward, rank_zero_view = _agreed_forward([fp.forward for fp in fps], _data_parallel(fps, logical))
    env = first.env
    if rank_zero_view:  # said in the file: compare() will not set one rank's share against another world size
        env = {**env, "settings": {**env.get("settings", {}), FORWARD_VIEW: RANK_ZERO_VIEW}}
    return replace(
        first,
        env=env,
        device=",".join(sorted({d for fp in fps for d in fp.device.split(",")})),
        training=all(fp.training for fp in fps),
        params=params,
        state=state,
        optimizer=_merge_optimizer([fp.optimizer for fp in fps]),
        step=_merge_step(parts, logical),
        rank=rank,
        world_size=len(parts),
        logical=True,
        tensors=None,
        batch=_agreed_batch([fp.batch for fp in fps]),
        modules=_merge_modules(fps),
        forward=forward,
    )


def _data_parallel(fps: list[Fingerprint], logical: list[Logical]) -> bool:
    """Every rank runs the whole model (no tensor, pipeline or FSDP sharding): every tensor whole on
    every rank that holds it and the same module calls on every rank. The ranks then differ only in
    their data, and rank 0's activations are the model's on its share of the batch."""
    whole = all(block.piece.whole for entry in logical for _, block in entry.sources)
    calls = [None if fp.forward is None else {(r.name, r.call, r.io) for r in fp.forward} for fp in fps]
    return whole and calls[0] is not None and all(c == calls[0] for c in calls)


def _global_record(full: TensorRecord, entry: Logical) -> TensorRecord:
    return replace(full, name=entry.name, native_name=entry.block.native_name, module=entry.block.module,
                   shape=list(entry.global_shape), numel=math.prod(entry.global_shape), trainable=entry.block.trainable)


def _merge_optimizer(records: list[OptimizerRecord | None]) -> OptimizerRecord | None:
    present = [r for r in records if r is not None]
    if not present:
        return None
    first = present[0]
    groups = [OptimizerGroup(dict(g.hparams), list(g.params)) for g in first.groups]
    for other in present[1:]:
        if other.type != first.type or len(other.groups) != len(groups):
            raise FingerprintError(
                f"the ranks built different optimizers ({first.type} with {len(groups)} group(s) vs "
                f"{other.type} with {len(other.groups)} group(s))"
            )
        for index, (mine, theirs) in enumerate(zip(groups, other.groups)):
            if theirs.hparams != mine.hparams:
                raise FingerprintError(f"the ranks disagree on optimizer group {index}: {mine.hparams} vs {theirs.hparams}")
            mine.params += [name for name in theirs.params if name not in mine.params]
    return replace(first, groups=groups)


def _merge_step(parts: list[RankPart], logical: list[Logical]) -> StepRecord | None:
    steps = [p.fingerprint.step for p in parts]
    if any(step is None for step in steps):
        return None
    by_rank = {p.rank: p.fingerprint.step for p in parts}
    trainable = [entry for entry in logical if entry.kind == "params"]
    with_grads, with_updates = _names(steps, "grad_norms"), _names(steps, "update_norms")
    grad_norms = {e.name: _block_norm(e, lambda r: by_rank[r].grad_norms) for e in trainable if e.name in with_grads}
    updates = {e.name: _block_norm(e, lambda r: by_rank[r].update_norms) for e in trainable if e.name in with_updates}
    present = [v for v in grad_norms.values() if v is not None]
    first = steps[0]
    return replace(
        first,
        loss=_last_stage_loss([s.loss for s in steps], "step-0 loss"),
        grad_norm=math.sqrt(sum(v * v for v in present)) if present else None,
        grad_norms=grad_norms,
        loss_after_step=_last_stage_loss([s.loss_after_step for s in steps], "loss after the step", required=False),
        update_norms=updates,
        **_merge_later_steps(steps),
    )


def _merge_later_steps(steps: list[StepRecord]) -> dict[str, Any]:
    """`--steps N` of every rank: each rank's losses kept (`rank_losses`), and per step the loss of the
    whole batch as `losses` (the ranks' mean, as the data-parallel gradient averages them). The lr is
    rank 0's: the optimizer groups are checked equal on every rank."""
    recorded = [step.losses for step in steps if step.losses]
    if not recorded:
        return {}
    count = min(len(losses) for losses in recorded)
    merged = {
        "losses": [_last_stage_loss([losses[k] for losses in recorded], f"step-{k} loss") for k in range(count)],
        "lrs": steps[0].lrs[:count] if steps[0].lrs else steps[0].lrs,
        "rank_losses": [list(step.losses or []) for step in steps],
    }
    unrecorded = [f"rank {rank}: {step.steps_unrecorded}" for rank, step in enumerate(steps) if step.steps_unrecorded]
    if len(recorded) < len(steps):
        unrecorded.append(f"{len(steps) - len(recorded)} of {len(steps)} ranks recorded no loss "
                          "(pipeline stages before the last)")
    merged["steps_unrecorded"] = "; ".join(unrecorded) or None
    return merged


def _names(steps: list[StepRecord], attribute: str) -> set[str]:
    return {name for step in steps for name in getattr(step, attribute)}


def _block_norm(entry: Logical, norms_of: Callable[[int], dict[str, Any]]) -> float | None:
    """The logical tensor's norm from its distinct blocks' norms (root sum of squares)."""
    values = [norms_of(rank).get(entry.name) for rank, _ in entry.sources]
    if all(v is None for v in values):
        return None
    return math.sqrt(sum(v * v for v in values if v is not None))


def _last_stage_loss(losses: list[float | None], what: str, required: bool = True) -> float | None:
    """The loss of the ranks that computed one: the last pipeline stage, averaged over its
    data-parallel replicas (tensor-parallel peers hold the same value)."""
    present = [v for v in losses if v is not None]
    if not present:
        if required:
            raise FingerprintError(f"no rank recorded the {what}: pass the loss on the last pipeline stage")
        return None
    if all(v == present[0] for v in present):
        return present[0]
    return math.fsum(present) / len(present)


def _agreed_batch(batches: list[Any]) -> Any:
    if any(b is None for b in batches):
        return None
    first = batches[0]
    signature = [(v.path, v.sha256) for v in first]
    return first if all([(v.path, v.sha256) for v in b] == signature for b in batches) else None


def _merge_modules(fps: list[Fingerprint]) -> Any:
    if any(fp.modules is None for fp in fps):
        return None
    seen: dict[str, Any] = {}
    for fp in fps:
        for module in fp.modules or []:
            seen.setdefault(module.name, module)
    return list(seen.values())


def _agreed_forward(records: list[list[ActivationRecord] | None],
                    rank_zero_view: bool = False) -> tuple[list[ActivationRecord] | None, bool]:
    """Activation records every rank that recorded them agrees on, in the order they first ran.
    `rank_zero_view` (pure data parallelism): where the ranks' data differ, rank 0's record, so the
    forward stage compares every module; the second value says whether any record is rank 0's alone."""
    if any(r is None for r in records):
        return None, False
    found: dict[tuple[str, int, str], list[ActivationRecord]] = {}
    for rank_records in records:
        for item in rank_records or []:
            found.setdefault((item.name, item.call, item.io), []).append(item)
    agreed, rank_zero = [], []
    for copies in found.values():
        signature = [(v.path, v.sha256) for v in copies[0].values]
        if all([(v.path, v.sha256) for v in c.values] == signature for c in copies[1:]):
            agreed.append(copies[0])
        elif rank_zero_view:
            agreed.append(copies[0])
            rank_zero.append(copies[0].name)
    return agreed, bool(rank_zero)


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")
