"""Qualified names: resolving what a dotted name in a file refers to, through its imports and aliases.

Resolution is flow-insensitive on purpose: a name bound in several ways anywhere in the file
(`try: import torch_npu` / `except ImportError: torch_npu = None`, imports inside functions)
means all of them, so a rule matches if any binding matches. It is deterministic: the same
file always gives the same sets.
"""

from __future__ import annotations

from functools import lru_cache

from acclint.knowledge import table


@lru_cache(maxsize=1)
def _prefixes() -> tuple:
    # Longest first so that the most specific rewrite wins.
    items = table("names")["prefixes"].items()
    return tuple(sorted(items, key=lambda kv: -len(kv[0])))


@lru_cache(maxsize=65536)
def canonical(name: str) -> str:
    for prefix, replacement in _prefixes():
        if name == prefix or name.startswith(prefix + "."):
            return replacement + name[len(prefix):]
    return name


def resolve(dotted: str, bindings: dict) -> frozenset:
    """All qualified names `dotted` may denote. Unbound heads resolve to nothing."""
    if not dotted:
        return frozenset()
    head, _, rest = dotted.partition(".")
    targets = bindings.get(head)
    if not targets:
        return frozenset()
    suffix = "." + rest if rest else ""
    return frozenset(canonical(target + suffix) for target in targets)


def bind_aliases(bindings: dict, aliases: list) -> None:
    """Add `name = some.dotted.name` aliases, following chains (a = torch.backends; b = a.cudnn)."""
    pending = list(aliases)
    # Each round resolves aliases whose right side is now known; chains are short.
    for _ in range(4):
        progressed = False
        remaining = []
        for name, dotted in pending:
            targets = resolve(dotted, bindings)
            if targets:
                before = bindings.get(name, set())
                merged = set(before) | targets
                if merged != before:
                    bindings[name] = merged
                    progressed = True
            else:
                remaining.append((name, dotted))
        pending = remaining
        if not progressed:
            break
