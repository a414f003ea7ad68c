"""Rule maturity: `stable` rules run by default, `preview` rules only when asked for.

A rule declares its maturity (new rules start as preview). The judged corpus
(benchmarks/precision/) then decides: its measured figures live in knowledge/rule_precision.toml,
written by benchmarks/precision/measure.py. A warning or error rule with at least
`MIN_JUDGED` findings judged right or wrong is preview while under `STABLE_PRECISION` and stable once at or
above it, whatever it declared. Fewer judged findings leave the declaration as it is (a precision
measured on three warnings says little), unless none of at least `MIN_JUDGED_NONE_RIGHT` was right.

Maturity is decided per rule and proof: a finding is proven when every premise it rests on is
(findings.Premise). Where the corpus measured a rule's proven findings on their own (the table's
`[CODE.proven]`), those figures decide, whatever its unproven findings measure: the rule runs by
default and its unproven findings are advice (info, linter.engine.stand_on_premises). Where no proven
finding was judged, the unproven ones do not decide either: the declaration holds. Fewer than
`MIN_JUDGED` proven ones leave the figures of all its findings to decide, as the best evidence there is.
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
    """One rule's verdicts on the judged corpus (weighted back where a stratum was sampled, so the
    counts may be fractional). `immaterial`: right but it does not change the numbers there;
    counted in `right`, not in the strict figure."""

    judged: float
    right: float
    wrong: float
    debatable: float
    immaterial: float = 0

    @property
    def decided(self) -> float:
        """Verdicts that say right or wrong: a debatable one decides neither way (precision is right /
        (right + wrong), as the issues that set the bar measure it)."""
        return self.right + self.wrong

    @property
    def ratio(self) -> float:
        return self.right / self.decided if self.decided else 0.0

    def describe(self) -> str:
        if not round(self.decided):
            return f"{self.judged:.0f} judged, all debatable" if round(self.judged) else "none judged"
        return f"{100 * self.ratio:.0f}% of {self.decided:.0f} judged"


_COUNTS = ("judged", "right", "wrong", "debatable", "immaterial")


def _precision(row: dict) -> Precision:
    return Precision(**{k: row[k] for k in _COUNTS if k in row})


@lru_cache(maxsize=1)
def precision_table() -> dict[str, Precision]:
    return {code: _precision(row) for code, row in _rows().items()}


@lru_cache(maxsize=1)
def proven_table() -> dict[str, Precision]:
    """The figures of each rule's proven findings, where the corpus measured them apart."""
    return {code: _precision(row["proven"]) for code, row in _rows().items() if isinstance(row.get("proven"), dict)}


@lru_cache(maxsize=1)
def _rows() -> dict:
    text = resources.files("acclint.knowledge").joinpath("rule_precision.toml").read_text("utf-8")
    return {code: row for code, row in tomllib.loads(text).items() if isinstance(row, dict)}


def reload() -> None:
    """Forget the table read so far: the next question reads knowledge/rule_precision.toml again (the
    precision benchmark rewrites it, then measures with the maturity it decides)."""
    for cached in (_rows, precision_table, proven_table):
        cached.cache_clear()


def measured(code: str) -> Optional[Precision]:
    return precision_table().get(code)


def measured_proven(code: str) -> Optional[Precision]:
    return proven_table().get(code)


def maturity(rule, table: Optional[dict] = None, proven: Optional[dict] = None) -> str:
    """The maturity the rule's proven findings run with: its declaration, overruled by enough
    measured verdicts, those of its proven findings first. `table` / `proven`: code -> Precision;
    the packaged measurements when None."""
    declared = getattr(rule, "maturity", STABLE)
    if rule.severity not in JUDGED_SEVERITIES:
        return declared
    proven_figures = (proven_table() if proven is None and table is None else proven or {}).get(rule.code)
    if proven_figures is not None and proven_figures.decided >= MIN_JUDGED:
        return _decided(proven_figures)
    if proven_figures is not None and not proven_figures.decided:
        # Measured by proof, and no proven finding judged: the unproven ones (advice in a default run)
        # say nothing of what a proven finding would be, so they neither promote nor demote the rule.
        return declared
    figures = (precision_table() if table is None else table).get(rule.code)
    if figures is None:
        return declared
    if figures.decided < MIN_JUDGED:
        return PREVIEW if figures.decided >= MIN_JUDGED_NONE_RIGHT and not figures.right else declared
    return _decided(figures)


def _decided(figures: Precision) -> str:
    return STABLE if figures.ratio >= STABLE_PRECISION else PREVIEW


def is_preview(rule) -> bool:
    return maturity(rule) == PREVIEW
