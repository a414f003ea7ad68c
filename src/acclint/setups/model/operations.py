"""Row source: an operation computed in one form on the left and another on the right (a fused
kernel vs composed ops, GELU tanh vs erf), from knowledge/fused_ops.toml `[operations]`."""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from acclint.setups import keys
from acclint.setups.diff import Mismatch
from acclint.setups.model.forms import operations
from acclint.setups.model.read import ModelSide, Occurrence
from acclint.setups.model.sources import Rows, register
from acclint.setups.record import Setting

CATEGORY = "fused-op"


@register
def operation_forms(left: ModelSide, right: ModelSide) -> Rows:
    rows = Rows()
    lefts, rights = _by_operation(left), _by_operation(right)
    for operation in operations():
        on_left, on_right = lefts.get(operation), rights.get(operation)
        if not on_left or not on_right:  # one side computes it some way acclint does not know
            continue
        rows.supersedes |= _setup_keys(operation)
        pair = _differing_pair(on_left, on_right)
        if pair is None:
            rows.same.append(operation)
        else:
            rows.mismatches.append(_mismatch(operation, pair[0], on_left, pair[1], on_right))
    # In the left's source order, as the setup diff lists settings: the report reads like the model.
    rows.mismatches.sort(key=lambda m: (m.left.where.path, m.left.where.line))
    return rows


def _differing_pair(on_left: list, on_right: list) -> Optional[tuple]:
    """The occurrences to show when the two sides compute the operation in different forms, else None.

    Classes and functions of the same name are the same part of the model: they are compared with
    each other (a weight standardisation in one class is no LayerNorm of another). What sits in a
    part only one side has is compared with what the other side has outside the shared parts."""
    shared = {o.scope for o in on_left} & {o.scope for o in on_right}
    for scope in dict.fromkeys(o.scope for o in on_left if o.scope in shared):
        pair = _pair([o for o in on_left if o.scope == scope], [o for o in on_right if o.scope == scope])
        if pair is not None:
            return pair
    rest_left = [o for o in on_left if o.scope not in shared]
    rest_right = [o for o in on_right if o.scope not in shared]
    return _pair(rest_left, rest_right) if rest_left and rest_right else None


def _pair(on_left: list, on_right: list) -> Optional[tuple]:
    left_forms, right_forms = _forms(on_left), _forms(on_right)
    if left_forms == right_forms:
        return None
    shown_left = _first(on_left, lambda o: o.form.form not in right_forms) or on_left[0]
    shown_right = (_first(on_right, lambda o: o.form.form not in left_forms)
                   or _first(on_right, lambda o: o.form.form != shown_left.form.form) or on_right[0])
    return shown_left, shown_right


def _by_operation(side: ModelSide) -> dict:
    out: dict = {}
    for occurrence in side.occurrences:
        out.setdefault(occurrence.form.operation, []).append(occurrence)
    return out


def _forms(occurrences: list) -> frozenset:
    return frozenset(o.form.form for o in occurrences)


def _first(occurrences: list, wanted) -> Optional[Occurrence]:
    return next((o for o in occurrences if wanted(o)), None)


def _setting(operation: str, shown: Occurrence, every: list) -> Setting:
    """The shown occurrence; the side's other forms, each where it first appears, as its note."""
    others: dict = {}
    for other in every:
        if other.form.form != shown.form.form:
            others.setdefault(other.form.form, other)
    note = "; ".join(f"also {o.form.label} at {o.where}" for o in others.values())
    return Setting(operation, shown.form.label, shown.where, written=shown.form.label, note=note)


def _mismatch(operation: str, left: Occurrence, on_left: list, right: Occurrence, on_right: list) -> Mismatch:
    entry = operations()[operation]
    left_setting, right_setting = _setting(operation, left, on_left), _setting(operation, right, on_right)
    sides = f"left {_place(left_setting)}, right {_place(right_setting)}"
    notes = [o.form.note for o in (left, right) if o.form.note]
    consequence = "; ".join([entry["consequence"], *dict.fromkeys(notes)]) + f" ({entry['source']})"
    message = (f"{operation} ({entry['what']}) is computed differently: {sides}. Numerics: {consequence}. "
               f"While aligning accuracy, compute it the same way on both sides (or accept the difference "
               f"with `--ignore {operation}`).")
    return Mismatch(operation, CATEGORY, left_setting, right_setting, message, consequence=consequence)


def _place(setting: Setting) -> str:
    extra = f"; {setting.note}" if setting.note else ""
    return f"{setting.value} ({setting.where}{extra})"


@lru_cache(maxsize=None)
def _setup_keys(operation: str) -> frozenset:
    """The setup diff's fused-call keys (knowledge/setups.toml `[fused]`) whose kernels are forms of
    `operation`: the setup diff sees the same call, this diff says more about it."""
    calls = frozenset(call for entry in operations()[operation]["forms"] for call in entry["calls"])
    return frozenset(key for key, entry in keys.knowledge()["fused"].items() if calls & set(entry["calls"]))
