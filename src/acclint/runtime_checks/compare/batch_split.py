"""The same samples split differently: micro-batch x accumulation, or rank x micro-batch.

What reaches one optimizer step is a set of samples. Two micro-batches of 4 accumulated, one
batch of 8, and two ranks of 4 each feed the same step when they hold the same 8 samples: the
per-sample hashes say so. Compared tensor by tensor (path "0.0" against "0") they would read as
different data; here they are pooled per position in the micro-batch ("0.input_ids" and
"1.input_ids" are two micro-batches of "input_ids") and compared as sets of samples.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from acclint.runtime_checks.model.fingerprint import ValueRecord


@dataclass
class Split:
    """One reading of a side's batch records: `micro` micro-batches of each named tensor."""

    micro: int
    pooled: dict[str, tuple[Counter, tuple[int, ...], int]]  # key -> (sample hashes, sample shape, samples)

    def describe(self, world_size: int) -> str:
        sizes = {count for _, _, count in self.pooled.values()}
        total = next(iter(sizes)) if len(sizes) == 1 else max(sizes)
        per = total // max(self.micro * world_size, 1)
        ranks = f"{world_size} ranks x " if world_size > 1 else ""
        return f"{ranks}{self.micro} micro-batch{'es' if self.micro != 1 else ''} of {per}"


def readings(records: list[ValueRecord]) -> list[Split]:
    """The ways to read `records`: as one batch, and (paths "<i>.<rest>") as micro-batches i of <rest>."""
    found = []
    records = [r for r in records if r.shape]  # a 0-d tensor (a count of tokens) holds no samples
    whole = _pool({r.path: [r] for r in records}, 1)
    if whole is not None:
        found.append(whole)
    heads = {r.path.partition(".")[0] for r in records}
    if all(h.isdigit() for h in heads) and len(heads) > 1:
        groups: dict[str, list[ValueRecord]] = {}
        for record in records:
            groups.setdefault(record.path.partition(".")[2], []).append(record)
        if all(len(group) == len(heads) for group in groups.values()):
            micro = _pool(groups, len(heads))
            if micro is not None:
                found.append(micro)
    return found


def _pool(groups: dict[str, list[ValueRecord]], micro: int) -> Split | None:
    pooled = {}
    for key, records in groups.items():
        if any(not r.samples or not r.shape or len(r.samples) != r.shape[0] for r in records):
            return None  # no per-sample hashes (a scalar, a batch too large to hash per sample)
        shapes = {tuple(r.shape[1:]) for r in records}
        if len(shapes) != 1:
            return None
        samples = Counter(s for r in records for s in r.samples)
        pooled[key] = (samples, shapes.pop(), sum(len(r.samples) for r in records))
    return Split(micro, pooled) if pooled else None


def same_samples_split_differently(left: list[ValueRecord], right: list[ValueRecord], left_world: int,
                                   right_world: int) -> str | None:
    """How the two sides split the same samples, when they do (None: other samples, or the same split)."""
    for a in readings(left):
        for b in readings(right):
            if set(a.pooled) != set(b.pooled):
                continue
            if all(a.pooled[k][0] == b.pooled[k][0] and a.pooled[k][1] == b.pooled[k][1] for k in a.pooled):
                described = a.describe(left_world), b.describe(right_world)
                if described[0] != described[1]:
                    return f"{described[0]} on the left, {described[1]} on the right"
    return None
