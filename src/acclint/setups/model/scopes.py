"""Pairing the classes of the two sides whose names differ (`LlamaMLP` and `NpuMLP`), so the row
sources compare them with each other as they do classes of the same name.

Conservative on purpose (knowledge/model_values.toml `[scopes]`): only model classes (a class with a
`forward`/`construct`) that have no namesake on the other side, in source order, and only when the
two compute the same non-empty set of operations and values. Anything else stays unpaired."""

from __future__ import annotations

from functools import lru_cache

from acclint.knowledge import table
from acclint.setups.model.read import ModelSide
from acclint.setups.model.values import written_values


@lru_cache(maxsize=1)
def _methods() -> frozenset:
    return frozenset(table("model_values")["scopes"]["methods"])


def model_classes(side: ModelSide) -> list[str]:
    """The side's model classes by their innermost name, in source order."""
    found: dict = {}
    for file in side.files:
        owners = {f.owner for f in file.facts.functions.values()
                  if f.owner and f.qualname.rsplit(".", 1)[-1] in _methods()}
        for cls in sorted(file.facts.classes.values(), key=lambda c: c.order):
            if cls.qualname in owners:
                found.setdefault(cls.qualname.rsplit(".", 1)[-1], None)
    return list(found)


def _structure(side: ModelSide) -> dict:
    """Class/function -> what it computes: its operations and the kinds of values it writes."""
    out: dict = {}
    for occurrence in side.occurrences:
        out.setdefault(occurrence.scope, set()).add(occurrence.form.operation)
    for written in written_values(side)[0]:
        out.setdefault(written.scope, set()).add(written.kind)
    return out


def pair_by_position(left: ModelSide, right: ModelSide) -> dict:
    """Right class name -> the left class it is paired with."""
    lefts, rights = model_classes(left), model_classes(right)
    unmatched_left = [name for name in lefts if name not in rights]
    unmatched_right = [name for name in rights if name not in lefts]
    if not unmatched_left or not unmatched_right:
        return {}
    left_structure, right_structure = _structure(left), _structure(right)
    pairs, start = {}, 0
    for name in unmatched_left:
        wanted = left_structure.get(name)
        if not wanted:
            continue
        for index in range(start, len(unmatched_right)):
            if right_structure.get(unmatched_right[index]) == wanted:
                pairs[unmatched_right[index]] = name
                start = index + 1
                break
    return pairs
