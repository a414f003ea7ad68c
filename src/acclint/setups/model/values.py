"""Row source: the literal values layers are built with (norm epsilon, dropout probability),
compared between the matching classes/functions of the two sides (knowledge/model_values.toml
`[values]`). Read from the engine's facts of each file: no second walk."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional

from acclint.knowledge import table
from acclint.linter.facts import NOT_LITERAL, Call
from acclint.setups import keys
from acclint.setups.diff import Mismatch
from acclint.setups.model.read import ModelSide
from acclint.setups.model.sources import Rows, register
from acclint.setups.record import Setting, Where
from acclint.setups.values import same, show


@dataclass(frozen=True)
class Spec:
    """Where one kind of value is written in one family of calls."""

    kind: str
    family: str
    calls: frozenset
    suffixes: tuple
    keywords: tuple
    position: Optional[int]
    default: Any  # None: unknown when not written
    complement: frozenset = frozenset()  # keywords holding 1 - the value (MindSpore keep_prob)


@dataclass(frozen=True)
class Written:
    """One value on one side: what, where, in which class/function."""

    kind: str
    family: str
    value: Any
    where: Where
    scope: str
    written: str
    default: bool = False
    paired: str = ""


@lru_cache(maxsize=1)
def kinds() -> dict:
    return table("model_values")["values"]


@lru_cache(maxsize=1)
def specs() -> tuple:
    out = []
    for kind, entry in kinds().items():
        for spec in entry.get("calls", ()):
            out.append(Spec(kind, spec["family"], frozenset(spec.get("calls", ())), tuple(spec.get("suffixes", ())),
                            tuple(spec["keywords"]), spec.get("position"), spec.get("default")))
        if "constructors" in entry:
            out.extend(_from_constructors(kind, entry["constructors"]))
    return tuple(out)


def _from_constructors(kind: str, role: str) -> list:
    """setups.toml `[constructors]` of `role`: each argument that holds the value is one spec."""
    out = []
    for name, spec in keys.constructors().items():
        if spec.get("role") != role:
            continue
        params = spec.get("params", [])
        for param in spec.get("keys", {}):
            default = spec.get("defaults", {}).get(param)
            out.append(Spec(kind, role, frozenset({name}), (), (param,), params.index(param) if param in params else None,
                            default, frozenset(spec.get("complement", ())) & {param}))
    return out


def written_values(side: ModelSide) -> tuple[list[Written], set]:
    """Every value a side writes (or leaves to a known default), in source order; and the kinds
    with a call whose value cannot be read (`nn.Dropout(config.attention_dropout)`)."""
    found, unread = [], set()
    for file, call in side.calls():
        for kind_specs in _matching(call):
            value = _value(kind_specs, call)
            if value is None:
                unread.add(kind_specs[0].kind)
                continue
            literal, written, default = value
            found.append(side.renamed_occurrence(Written(kind_specs[0].kind, kind_specs[0].family, literal, file.where(call),
                                                         ModelSide.scope_of(file, call), written, default)))
    return found, unread


def _matching(call: Call) -> list:
    """The specs of `call`, grouped by kind (a MindSpore Dropout has a spec per argument)."""
    by_kind: dict = {}
    last = call.callee.rsplit(".", 1)[-1]
    for spec in specs():
        if call.names & spec.calls or (spec.suffixes and not call.names & _known_calls()
                                       and last.endswith(spec.suffixes)):
            by_kind.setdefault(spec.kind, []).append(spec)
    return list(by_kind.values())


@lru_cache(maxsize=1)
def _known_calls() -> frozenset:
    return frozenset(name for spec in specs() for name in spec.calls)


def _value(kind_specs: list, call: Call) -> Optional[tuple]:
    """(value, as written, is a default) of the first spec whose argument is written; else the
    default; None when the value cannot be read (not a literal, `*args`, no known default)."""
    if any(arg.star for arg in call.args):
        return None
    for spec in kind_specs:
        for keyword in spec.keywords:
            arg = call.arg(keyword, spec.position if keyword == spec.keywords[0] else None)
            if arg is None:
                continue
            literal = arg.value.literal
            if literal is NOT_LITERAL or isinstance(literal, bool) or not isinstance(literal, (int, float)):
                return None
            value = round(1 - literal, 12) if keyword in spec.complement else literal
            return value, f"{call.callee}({keyword}={literal!r})", False
    default = next((spec for spec in kind_specs if spec.default is not None), None)
    if default is None:
        return None
    value = round(1 - default.default, 12) if default.keywords[0] in default.complement else default.default
    return value, f"{call.callee} default {default.keywords[0]}", True


@register
def layer_values(left: ModelSide, right: ModelSide) -> Rows:
    rows = Rows()
    (lefts, unread_left), (rights, unread_right) = written_values(left), written_values(right)
    for kind, entry in kinds().items():
        if "constructors" in entry and kind in unread_left | unread_right:
            # The setup diff has the same calls under the same key and follows `args.x` to its
            # argparse default, which this source does not: its row stands alone.
            continue
        for family in dict.fromkeys(w.family for w in lefts if w.kind == kind):
            on_left = [w for w in lefts if w.kind == kind and w.family == family]
            on_right = [w for w in rights if w.kind == kind and w.family == family]
            if not on_right:
                continue
            key = entry["key"].format(family=family)
            if "constructors" in entry:
                rows.supersedes |= _setup_keys(entry["constructors"])  # this row says it per class
            pair = differing(on_left, on_right, _equal)
            if pair is None:
                rows.same.append(key)
            else:
                rows.mismatches.append(_mismatch(key, entry, *pair))
    return rows


def _equal(left: Written, right: Written) -> bool:
    """Two defaults are no row of this source even when the frameworks' differ: that is the
    framework-default source's row (it names the defaults' sources)."""
    return same(left.value, right.value) or (left.default and right.default)


@lru_cache(maxsize=None)
def _setup_keys(role: str) -> frozenset:
    return frozenset(target for spec in keys.constructors().values() if spec.get("role") == role
                     for target in spec.get("keys", {}).values() if isinstance(target, str))


def differing(on_left: list, on_right: list, equal) -> Optional[tuple]:
    """The first (left, right) records that differ between matching scopes: within each class or
    function both sides have, then among what lies outside those on each side. `equal` compares two
    records. A pair shows a value the other side's scope does not have at all."""
    shared = {w.scope for w in on_left} & {w.scope for w in on_right}
    groups = [([w for w in on_left if w.scope == s], [w for w in on_right if w.scope == s])
              for s in dict.fromkeys(w.scope for w in on_left if w.scope in shared)]
    groups.append(([w for w in on_left if w.scope not in shared], [w for w in on_right if w.scope not in shared]))
    for group_left, group_right in groups:
        if not group_left or not group_right:
            continue
        left_only = [w for w in group_left if not any(equal(w, o) for o in group_right)]
        right_only = [w for w in group_right if not any(equal(w, o) for o in group_left)]
        if left_only or right_only:
            return (left_only or group_left)[0], (right_only or group_right)[0]
    return None


def _mismatch(key: str, entry: dict, left: Written, right: Written) -> Mismatch:
    settings = [_setting(key, w) for w in (left, right)]
    consequence = f"{entry['consequence']} ({entry['source']})"
    sides = ", ".join(f"{side} {show(w.value)} ({_place(w)})" for side, w in (("left", left), ("right", right)))
    message = (f"{key} ({entry['what']}) differs in the matching layer: {sides}. Numerics: {consequence}. "
               f"Write {show(left.value)} on the right to match the left.")
    return Mismatch(key, entry["category"], *settings, message, consequence=consequence)


def _setting(kind: str, written: Written) -> Setting:
    return Setting(kind, written.value, written.where, origin="default" if written.default else "set",
                   written=written.written, note=scope_note(written))


def _place(written: Written) -> str:
    parts = [str(written.where), written.written]
    note = scope_note(written)
    return "; ".join(parts + [note] if note else parts)


def scope_note(record) -> str:
    """`in NpuMLP, paired with LlamaMLP by position` for a record of a class paired by position."""
    return f"in {record.paired}, paired with {record.scope} by position" if record.paired else ""
