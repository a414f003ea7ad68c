"""Facts derived once per program and shared by every rule that reads them."""

from __future__ import annotations

from typing import Callable, TypeVar

from acclint.linter.context import ProgramContext

T = TypeVar("T")


def per_program(ctx: ProgramContext, key: str, compute: Callable[[ProgramContext], T]) -> T:
    """`compute(ctx)`, computed on first use and kept in the program's cache."""
    value = ctx.cache.get(key)
    if value is None:
        value = ctx.cache[key] = compute(ctx)
    return value
