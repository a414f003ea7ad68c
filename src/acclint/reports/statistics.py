"""`--statistics`: how many findings each rule produced, as ruff prints them (count, code, name),
most frequent first. Per-file errors count under their own codes (E902, E999, E000)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from acclint.findings import ScanResult
from acclint.linter.fix import fixable
from acclint.linter.rulebase import Rule

STATISTICS_FORMATS = ("text", "json")


@dataclass(frozen=True)
class Statistic:
    code: str
    name: str
    count: int
    fixable: bool  # `--fix` fixes at least one of them (a safe fix)

    def to_dict(self) -> dict:
        return {"code": self.code, "name": self.name, "count": self.count, "fixable": self.fixable}


def statistics(result: ScanResult, rules: Sequence[Rule]) -> list:
    names = {rule.code: rule.name for rule in rules}
    counts = Counter(finding.rule for finding in result.findings)
    safe = {finding.rule for finding in fixable(result.findings, unsafe=False)}
    rows = [Statistic(code, names.get(code, ""), count, code in safe) for code, count in counts.items()]
    errors = Counter((error.code, error.name) for error in result.errors)
    rows += [Statistic(code, name, count, False) for (code, name), count in errors.items()]
    return sorted(rows, key=lambda row: (-row.count, row.code))


def render_statistics(result: ScanResult, rules: Sequence[Rule], fmt: str) -> str:
    rows = statistics(result, rules)
    if fmt == "json":
        return json.dumps([row.to_dict() for row in rows], indent=2)
    if not rows:
        return ""
    count_width = max(len(str(row.count)) for row in rows)
    code_width = max(len(row.code) for row in rows)
    any_fixable = any(row.fixable for row in rows)
    lines = []
    for row in rows:
        marker = ("[*] " if row.fixable else "[ ] ") if any_fixable else ""
        lines.append(f"{row.count:>{count_width}}\t{row.code:<{code_width}}\t{marker}{row.name}".rstrip())
    return "\n".join(lines)
