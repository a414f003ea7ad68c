"""Findings grouped by rule for the HTML report: the summary by rule, and repeats folded.

A large codebase repeats one problem hundreds of times (one launch line copied into 250 recipes);
980 cards in a row hide the eight problems they are. Each rule shows its first few findings and
folds the rest under one line; the summary table lists the rules, worst and most frequent first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Protocol

from acclint.findings import SEVERITY_RANK
from acclint.reports.common import plural

SHOWN = 3  # findings of a rule shown before the fold
FOLD_OVER = 5  # a rule with at most this many findings is shown whole: folding 1 or 2 saves nothing


class Card(Protocol):
    rule: str
    title: str
    has_page: bool
    severity: str
    path: str
    line: int


def _rank(severity: str) -> int:
    return SEVERITY_RANK.get(severity, len(SEVERITY_RANK))


@dataclass
class RuleGroup:
    rule: str
    title: str
    has_page: bool
    item: str  # the checklist item's title
    findings: list  # FindingView, most severe first, then by path and line

    @property
    def severity(self) -> str:
        return min((f.severity for f in self.findings), key=_rank)

    @property
    def files(self) -> int:
        return len({f.path for f in self.findings})

    @property
    def shown(self) -> list:
        return self.findings if len(self.findings) <= FOLD_OVER else self.findings[:SHOWN]

    @property
    def folded(self) -> list:
        return self.findings[len(self.shown):]

    @property
    def where(self) -> str:
        return "in " + plural(self.files, "file")

    @property
    def fold_text(self) -> str:
        return f"{len(self.folded)} more {self.rule} findings"

    def sort_key(self) -> tuple:
        """Top problems first: the worst severity, then the most findings."""
        return (_rank(self.severity), -len(self.findings), self.rule)


def rule_groups(findings: Iterable[Card], item: str) -> list[RuleGroup]:
    by_rule: dict[str, list] = {}
    for finding in findings:
        by_rule.setdefault(finding.rule, []).append(finding)
    groups = []
    for cards in by_rule.values():
        cards.sort(key=lambda f: (_rank(f.severity), f.path, f.line))
        first = cards[0]
        groups.append(RuleGroup(first.rule, first.title, first.has_page, item, cards))
    return sorted(groups, key=RuleGroup.sort_key)
