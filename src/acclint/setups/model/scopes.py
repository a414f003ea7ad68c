"""Pairing the classes and functions of the two sides whose names differ (`LlamaMLP` and `NpuMLP`,
`swiglu` and `fused_swiglu`), so the row sources compare them with each other as they do those of
the same name.

Conservative on purpose (knowledge/model_values.toml `[scopes]`): only model classes (a class with a
`forward`/`construct`) with model classes, top-level functions with top-level functions, those that
have no namesake on the other side, in source order, and only when the two compute the same
non-empty set of operations and values. Anything else stays unpaired."""

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


def top_functions(side: ModelSide) -> list[str]:
    """The side's module-level functions, in source order."""
    found: dict = {}
    for file in side.files:
        for function in sorted(file.facts.functions.values(), key=lambda f: f.order):
            if function.owner is None and "." not in function.qualname:
                found.setdefault(function.qualname, None)
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
    """Right class/function name -> the left one it is paired with."""
    pairs: dict = {}
    structures: list = []  # computed once, and only when something is left to pair
    for listing in (model_classes, top_functions):
        lefts, rights = listing(left), listing(right)
        unmatched_left = [name for name in lefts if name not in rights]
        unmatched_right = [name for name in rights if name not in lefts]
        if not unmatched_left or not unmatched_right:
            continue
        if not structures:
            structures.extend((_structure(left), _structure(right)))
        pairs.update(_in_order(unmatched_left, unmatched_right, *structures))
    return pairs


def _in_order(unmatched_left: list, unmatched_right: list, left_structure: dict, right_structure: dict) -> dict:
    """Each left name with the next right one (after the last paired) that computes the same."""
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
