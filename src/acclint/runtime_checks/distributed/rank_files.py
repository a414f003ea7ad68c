"""Loading fingerprints, and one fingerprint from the files the ranks of a job wrote one by one (msrun).

A MindSpore rank has no torch.distributed to merge through while it captures, so each rank
writes its own file (`npu.json` -> `npu.rank0.json`, `npu.rank1.json`, ...). Loading `npu.json`
when only the rank files exist merges them with `logical.merge`, the way a distributed torch
capture merges online: every rank's file must be there, and the replicas of a parameter must
hold the same values (data parallel keeps them in sync; differing replicas are a broken run).
"""

from __future__ import annotations

import re
from pathlib import Path
from acclint.runtime_checks.model.errors import FingerprintError
from acclint.runtime_checks.model.fingerprint import Fingerprint, TensorRecord
from acclint.runtime_checks.model.fingerprint import load as load_file
from acclint.runtime_checks.distributed.logical import Block, Logical, RankPart, merge, plan
from acclint.runtime_checks.model.ranks import rank_path
from acclint.runtime_checks.model.sharding import Piece


def load(path: str | Path) -> Fingerprint:
    """A fingerprint file; for a path that only the ranks' own files exist for ("npu.json" ->
    "npu.rank0.json", ...), those files merged into one. FingerprintError on any problem."""
    path = Path(path)
    if not path.exists():
        merged = load_ranks(path)
        if merged is not None:
            return merged
    return load_file(path)


def rank_files(path: Path) -> dict[int, Path]:
    """The files `Fingerprint.save(path)` writes on each rank, by rank, that exist."""
    pattern = re.compile(re.escape(path.stem) + r"\.rank(\d+)" + re.escape(path.suffix))
    if not path.parent.is_dir():
        return {}
    return {
        int(match.group(1)): candidate
        for candidate in path.parent.iterdir()
        if (match := pattern.fullmatch(candidate.name))
    }


def load_ranks(path: Path) -> Fingerprint | None:
    """The merged fingerprint of `path`'s rank files; None when there are none."""
    files = rank_files(path)
    if not files:
        return None
    parts = {rank: load_file(file) for rank, file in sorted(files.items())}
    sizes = sorted({fp.world_size for fp in parts.values()})
    if len(sizes) != 1:
        raise FingerprintError(f"{path}: the rank files come from runs of {' and '.join(map(str, sizes))} ranks")
    world_size = sizes[0]
    for rank, fp in parts.items():
        if fp.rank != rank or fp.logical:
            raise FingerprintError(f"{files[rank]}: holds {'a merged fingerprint' if fp.logical else f'rank {fp.rank}'}, "
                                   f"not rank {rank}'s part (renamed file?)")
    missing = [rank for rank in range(world_size) if rank not in parts]
    if missing:
        expected = ", ".join(rank_path(path, rank, world_size).name for rank in missing)
        raise FingerprintError(
            f"{path}: the run had {world_size} ranks but the part(s) of rank(s) {', '.join(map(str, missing))} are "
            f"missing ({expected}); copy every rank's file next to the others"
        )
    merged = merge_ranks([parts[rank] for rank in range(world_size)])
    merged.path = str(path)
    return merged


def merge_ranks(fingerprints: list[Fingerprint]) -> Fingerprint:
    """One fingerprint from every rank's own (each holding whole tensors: replicas or pipeline stages)."""
    parts = [RankPart(fp.rank, _blocks(fp.params), _blocks(fp.state), fp) for fp in fingerprints]
    copies: dict[tuple[str, str], list[tuple[int, TensorRecord]]] = {}
    for fp in fingerprints:
        for kind, records in (("params", fp.params), ("state", fp.state)):
            for record in records:
                copies.setdefault((kind, record.name), []).append((fp.rank, record))

    def record(entry: Logical) -> TensorRecord:
        (first_rank, first), *others = copies[(entry.kind, entry.name)]
        for rank, other in others:
            if other.sha256 != first.sha256:
                raise FingerprintError(
                    f"{entry.name} holds other values on rank {rank} than on rank {first_rank}: the replicas were not "
                    "in sync at step 0 (seed every rank alike or broadcast the weights; check_rank_consistency shows all)"
                )
        return first

    return merge(parts, plan(parts), record, rank=0)


def _blocks(records: list[TensorRecord]) -> list[Block]:
    return [
        Block(r.name, r.native_name, r.module, r.trainable, r.dtype, Piece(tuple(r.shape), (0,) * len(r.shape), tuple(r.shape)))
        for r in records
    ]
