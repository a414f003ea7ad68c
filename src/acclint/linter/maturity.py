"""Rule maturity: `stable` rules run by default, `preview` rules only when asked for.

A rule declares its maturity (new rules start as preview). The judged corpus
(benchmarks/precision/) then decides: its measured figures live in knowledge/rule_precision.toml,
written by benchmarks/precision/measure.py. A warning or error rule with at least
`MIN_JUDGED` judged findings is preview while under `STABLE_PRECISION` and stable once at or
above it, whatever it declared. Fewer judged findings leave the declaration as it is (a precision
measured on three warnings says little), unless none of at least `MIN_JUDGED_NONE_RIGHT` was right.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

STABLE = "stable"
PREVIEW = "preview"
MATURITIES = (STABLE, PREVIEW)
STABLE_PRECISION = 0.9
MIN_JUDGED = 5
# Fewer findings than MIN_JUDGED say little about a precision between 0 and 1, but none right out of
# three already does: a rule at 90% would give that with odds of one in a thousand.
MIN_JUDGED_NONE_RIGHT = 3
# Info findings are hints, not claims a user must act on; the precision bar is for the rest.
JUDGED_SEVERITIES = ("error", "warning")


@dataclass(frozen=True)
class Precision:
    """One rule's verdicts on the judged corpus."""

    judged: int
    right: int
    wrong: int
    debatable: int

    @property
    def ratio(self) -> float:
        return self.right / self.judged if self.judged else 0.0

    def describe(self) -> str:
        return f"{100 * self.ratio:.0f}% of {self.judged} judged"


@lru_cache(maxsize=1)
def precision_table() -> dict[str, Precision]:
    text = resources.files("acclint.knowledge").joinpath("rule_precision.toml").read_text("utf-8")
    data = tomllib.loads(text)
    return {code: Precision(**{k: row[k] for k in ("judged", "right", "wrong", "debatable")})
            for code, row in data.items() if isinstance(row, dict)}


def measured(code: str) -> Optional[Precision]:
    return precision_table().get(code)


def maturity(rule, table: Optional[dict] = None) -> str:
    """The maturity the rule runs with: its declaration, overruled by enough measured verdicts.
    `table`: code -> Precision; the packaged measurements when None."""
    declared = getattr(rule, "maturity", STABLE)
    figures = (precision_table() if table is None else table).get(rule.code)
    if rule.severity not in JUDGED_SEVERITIES or figures is None:
        return declared
    if figures.judged < MIN_JUDGED:
        return PREVIEW if figures.judged >= MIN_JUDGED_NONE_RIGHT and not figures.right else declared
    return STABLE if figures.ratio >= STABLE_PRECISION else PREVIEW


def is_preview(rule) -> bool:
    return maturity(rule) == PREVIEW
