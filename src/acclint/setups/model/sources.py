"""The row sources of the model-code diff, and the diff itself: each source compares the two sides
one way (fused vs composed forms, framework defaults, ...) and returns rows of the setup diff's
shape. A new comparison is one function registered here:

    from acclint.setups.model.sources import Rows, register

    @register
    def api_differences(left: ModelSide, right: ModelSide) -> Rows:
        ...
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from acclint.setups.diff import Mismatch
from acclint.setups.model.read import ModelSide


@dataclass
class Rows:
    mismatches: list[Mismatch] = field(default_factory=list)
    same: list[str] = field(default_factory=list)  # keys compared and found equal
    # Keys of the setup diff that these rows replace (its `npu_swiglu` flag is this diff's `swiglu`).
    supersedes: set[str] = field(default_factory=set)

    def extend(self, other: "Rows") -> None:
        self.mismatches.extend(other.mismatches)
        self.same.extend(other.same)
        self.supersedes |= other.supersedes

    @property
    def compared(self) -> bool:
        return bool(self.mismatches or self.same)


RowSource = Callable[[ModelSide, ModelSide], Rows]
_SOURCES: list[RowSource] = []


def register(source: RowSource) -> RowSource:
    """Add a row source (usable as a decorator); registering one twice keeps one."""
    if source not in _SOURCES:
        _SOURCES.append(source)
    return source


def sources() -> tuple:
    return tuple(_SOURCES)


def diff_model(left: ModelSide, right: ModelSide) -> Rows:
    """Every registered source's rows, in registration order. LEFT is the reference. The right's
    model classes paired by position with the left's take the left's names first."""
    from acclint.setups.model.scopes import pair_by_position  # it reads the sources' records: no cycle

    right.renamed = {}
    right.renamed = pair_by_position(left, right)
    rows = Rows()
    for source in _SOURCES:
        rows.extend(source(left, right))
    # In the left's source order, as the setup diff lists settings: the report reads like the model.
    rows.mismatches.sort(key=lambda m: (m.left.where is None, m.left.where.path if m.left.where else "",
                                        m.left.where.line if m.left.where else 0))
    return rows
