"""Whether `.view(...)` on a transposed tensor must merge dims the transposition put out of order.

`view` can only merge adjacent dims k, k+1 whose strides chain (stride[k] == size[k+1] * stride[k+1]).
On a permutation of a contiguous tensor that holds exactly where the permutation keeps the two dims
in their original order (perm[k+1] == perm[k] + 1). A view to m dims from n > m dims merges at least
n - m adjacent pairs; when fewer pairs than that can merge, the view raises for every shape whose
dims are larger than 1. A view to as many dims as the tensor has either changes nothing (the identity)
or regroups dims; where no pair can merge every regrouping raises, and nobody writes a view that
changes nothing, so that counts as raising too. A view to more dims may only split dims, which is
always legal: never proved here. The tensor before the transposition is taken to be contiguous
(the data flow already drops names that were transposed twice).

The transposition is read from its call (`transpose(1, 2)`, `swapaxes(0, 1)`, `permute(0, 2, 1, 3)`
with literal ints). The tensor's rank is known for `permute`; for `transpose` every rank the dims
allow is tried, and the view counts as raising only when it raises for all of them.
"""

from __future__ import annotations

from typing import Optional

from acclint.linter.facts import Call

_SWAPS = frozenset({"transpose", "swapaxes", "swapdims"})
_LARGEST_RANK = 12  # beyond any tensor a model uses; the pair counts stop changing long before


def view_must_raise(transposer: Call, view_dims: int) -> bool:
    """`transposer(...).view(<view_dims sizes>)` raises whatever the sizes (all larger than 1)."""
    perms = _permutations(transposer)
    return bool(perms) and all(_raises(perm, view_dims) for perm in perms)


def _raises(perm: tuple, view_dims: int) -> bool:
    rank = len(perm)
    if view_dims > rank or perm == tuple(range(rank)):
        return False  # may only split dims; or nothing is out of order
    mergeable = sum(1 for k in range(rank - 1) if perm[k + 1] == perm[k] + 1)
    if view_dims == rank:
        return mergeable == 0  # every dim its own block: only the identity view is legal
    return rank - view_dims > mergeable


def _permutations(call: Call) -> list:
    """The dim orders the call may produce: one per rank the tensor may have ([] when unknown)."""
    ints = _literal_ints(call)
    if ints is None:
        return []
    if call.method == "permute":
        return [tuple(ints)] if sorted(ints) == list(range(len(ints))) else []
    if call.method not in _SWAPS or len(ints) != 2 or (ints[0] < 0) != (ints[1] < 0):
        return []
    lowest_rank = max(d + 1 if d >= 0 else -d for d in ints)
    perms = []
    for rank in range(lowest_rank, _LARGEST_RANK + 1):
        a, b = (d % rank for d in ints)
        perm = list(range(rank))
        perm[a], perm[b] = perm[b], perm[a]
        perms.append(tuple(perm))
    return perms


def _literal_ints(call: Call) -> Optional[list]:
    args = [a for a in call.args if a.keyword is None]
    if any(a.star for a in args) or len(args) != len(call.args):
        return None
    if len(args) == 1 and isinstance(args[0].value.literal, (tuple, list)):
        values = list(args[0].value.literal)  # permute((0, 2, 1, 3))
    else:
        values = [a.value.literal for a in args]
    if not values or not all(type(v) is int for v in values):
        return None
    return values
