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


def per_flow(ctx: ProgramContext, key: str, compute: Callable[[ProgramContext], T]) -> T:
    """`compute(ctx)` for facts of what the entry script runs, not of how it is launched: computed
    once per entry and shared by the program and each run of it (a recipe folder may hold
    hundreds of launch scripts of one entry)."""
    value = ctx.shared.get(key)
    if value is None:
        value = ctx.shared[key] = compute(ctx)
    return value
