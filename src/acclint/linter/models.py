"""What builds a model with weights, from the data in knowledge/usage.toml [models]: weighted
layers and library model factories. Shared by the training-program definition (gradients of a
model count as training) and the seed rules (the first model construction draws weights)."""

from __future__ import annotations

import re
from functools import lru_cache

from acclint.knowledge import table


def builds_weights(names: frozenset) -> bool:
    """Whether a call with these qualified names builds a weighted layer or a library model."""
    return bool(names & _layers()) or any(is_model_factory(name) for name in names)


@lru_cache(maxsize=1)
def _layers() -> frozenset:
    return frozenset(table("usage")["models"]["layers"])


@lru_cache(maxsize=4096)
def is_model_factory(name: str) -> bool:
    for prefix, match, exclude in _factories():
        if name.startswith(prefix):
            rest = name[len(prefix):]
            if match.fullmatch(rest) and not (exclude and exclude.fullmatch(rest)):
                return True
    return False


@lru_cache(maxsize=1)
def _factories() -> tuple:
    return tuple(
        (f["prefix"], re.compile(f["match"]), re.compile(f["exclude"]) if f.get("exclude") else None)
        for f in table("usage")["models"]["factories"]
    )
