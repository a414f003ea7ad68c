"""What library calls already do for the user (knowledge/library_behaviour.toml, generated from the
installed libraries' source by tools/gen_library_behaviour.py), joined with the hand-kept tables."""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from acclint.knowledge import table


@lru_cache(maxsize=1)
def seeders() -> dict:
    """seeding.toml's seeders, each covering also what the seeders its library body calls cover
    (`mindspore.set_seed` -> `mindspore.dataset.config.set_seed` -> `random.seed`)."""
    own = table("seeding")["seeders"]
    calls = {name: entry.get("calls", ()) for name, entry in table("library_behaviour")["seeders"].items()}

    def covers(name: str, seen: frozenset) -> set:
        found = set(own.get(name, {}).get("covers", ()))
        for callee in calls.get(name, ()):
            if callee not in seen:
                found |= covers(callee, seen | {callee})
        return found

    merged = {}
    for name, entry in own.items():
        merged[name] = {**entry, "covers": sorted(covers(name, frozenset({name})))}
    return merged


@lru_cache(maxsize=1)
def _sorted_inputs() -> dict:
    found = {}
    for name, entry in table("library_behaviour")["sorted_inputs"].items():
        for alias in (name, *entry.get("aliases", ())):
            found[alias] = {**entry, "name": name}
    return found


def sorted_input(names) -> Optional[dict]:
    """The entry of a dataset class (any of its qualified `names`) that sorts the files it is given."""
    readers = _sorted_inputs()
    return next((readers[name] for name in sorted(names) if name in readers), None)


@lru_cache(maxsize=1)
def train_mode_setters() -> frozenset:
    """Qualified names of library functions and classes that switch a network to training mode."""
    return frozenset(alias for name, entry in table("library_behaviour")["sets_train_mode"].items()
                     for alias in (name, *entry.get("aliases", ())))


def source_version(library: str) -> str:
    return table("library_behaviour")["sources"][library]["version"]
