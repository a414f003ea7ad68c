"""The rule set: one module per category, each exporting RULES."""

from __future__ import annotations

from acclint.rules import determinism, seed


def all_rules() -> list:
    rules = [*seed.RULES, *determinism.RULES]
    return sorted(rules, key=lambda r: r.code)
