"""Row source: the random generators each side draws from, where, and whether it seeds them
(knowledge/model_values.toml `[random]`, seeding.toml `[seeders]`), as rows of category `seed`:
the inventory msprobe's config_check builds at run time from call stacks, here read statically
from every Python file of the side (reachable or not: a side is usually one model or one program)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from acclint.knowledge import table
from acclint.knowledge.library import seeders as library_seeders
from acclint.linter.facts import Call
from acclint.setups.diff import Mismatch
from acclint.setups.model.read import ModelFile, ModelSide
from acclint.setups.model.sources import Rows, register
from acclint.setups.record import Setting, Where

PREFIX = "random-"


@dataclass(frozen=True)
class Use:
    """The first draw from a generator, or the first call that seeds it."""

    where: Where
    callee: str
    function: str  # the function (or `Class.method`) it is written in; "<module>" at top level


@dataclass
class Inventory:
    draws: dict  # generator -> Use of its first draw
    seeds: dict  # generator -> Use of its first seeding


@lru_cache(maxsize=1)
def _random() -> dict:
    return table("model_values")["random"]


@lru_cache(maxsize=1)
def _seeders() -> dict:
    return {name: frozenset(entry.get("covers", ())) for name, entry in library_seeders().items()}


def inventory(side: ModelSide) -> Inventory:
    found = Inventory({}, {})
    seeders = _seeders()
    for file, call in side.calls():
        for generator in _draws(call):
            found.draws.setdefault(generator, _use(file, call))
        for name in call.names & seeders.keys():
            for covered in seeders[name]:
                found.seeds.setdefault(covered, _use(file, call))
    return found


def _use(file: ModelFile, call: Call) -> Use:
    return Use(file.where(call), call.callee, call.scope)


def _draws(call: Call) -> list[str]:
    """The generators `call` draws from."""
    out = []
    global_rng = table("usage")["global_rng"]
    for generator, entry in _random()["generators"].items():
        if "rng" in entry:
            prefix, exempt = global_rng[f"{entry['rng']}_prefix"], global_rng[f"{entry['rng']}_exempt"]
            if any(name.startswith(prefix) and "." not in name[len(prefix):] and name[len(prefix):] not in exempt
                   for name in call.names):
                out.append(generator)
            continue
        names = call.names - set(entry.get("exempt", ()))
        calls, prefixes = entry.get("calls", ()), tuple(entry.get("prefixes", ()))
        if names & set(calls) or "." + call.method in calls or (prefixes and any(n.startswith(prefixes) for n in names)):
            out.append(generator)
    return out


@register
def random_draws(left: ModelSide, right: ModelSide) -> Rows:
    rows = Rows()
    lefts, rights = inventory(left), inventory(right)
    for generator, entry in _random()["generators"].items():
        on_left, on_right = lefts.draws.get(generator), rights.draws.get(generator)
        if on_left is None and on_right is None:
            continue
        if on_left is None or on_right is None:
            if entry.get("shared"):
                rows.mismatches.append(_mismatch(generator, entry, lefts, rights))
            continue
        if (_seed(lefts, entry) is None) == (_seed(rights, entry) is None):
            rows.same.append(PREFIX + generator)
        else:
            rows.mismatches.append(_mismatch(generator, entry, lefts, rights))
    return rows


def _seed(found: Inventory, entry: dict):
    """The first call that seeds the generator of `entry` (seeding.toml names it `seeded_by`)."""
    return found.seeds.get(entry["seeded_by"])


def _state(generator: str, entry: dict, found: Inventory) -> Setting:
    draw, seed = found.draws.get(generator), _seed(found, entry)
    key = PREFIX + generator
    if draw is None:
        return Setting(key, "no draws", None, written="not set", note=f"draws nothing from {entry['what']}")
    seeded = f"seeded by {seed.callee} at {seed.where}" if seed else "never seeded"
    value = "draws, seeded" if seed else "draws, not seeded"
    return Setting(key, value, draw.where, written=value, note=f"{draw.callee} in {draw.function}; {seeded}")


def _mismatch(generator: str, entry: dict, lefts: Inventory, rights: Inventory) -> Mismatch:
    left, right = _state(generator, entry, lefts), _state(generator, entry, rights)
    key = PREFIX + generator
    sides = ", ".join(f"{side} {_describe(s)}" for side, s in (("left", left), ("right", right)))
    table_ = _random()
    fix = _fix(generator, entry, lefts, rights)
    message = f"{key} ({entry['what']}): {sides}. Numerics: {table_['consequence']}. {fix}"
    return Mismatch(key, table_["category"], left, right, message, consequence=table_["consequence"])


def _describe(setting: Setting) -> str:
    place = f"{setting.where}; " if setting.where else ""
    return f"{setting.value} ({place}{setting.note})"


def _fix(generator: str, entry: dict, lefts: Inventory, rights: Inventory) -> str:
    if generator not in lefts.draws or generator not in rights.draws:
        return "Draw the same numbers from the same generator on both sides (or feed both from one saved stream)."
    seed = _seed(lefts, entry) or _seed(rights, entry)
    seeded_side, unseeded_side = ("left", "right") if _seed(lefts, entry) else ("right", "left")
    return f"Seed it on the {unseeded_side} as the {seeded_side} does ({seed.callee} at {seed.where})."
