"""What every reporter agrees on: output order, severity vocabularies, titles, counting words.

Kept in one place so the text, GitHub and SARIF views of one scan can never disagree.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Union

from acclint.findings import SEVERITIES, FileError, Finding, Skipped
from acclint.linter.rulebase import Rule

# acclint severity -> the vocabulary of each consumer. Every table covers all of SEVERITIES
# (a test checks), so adding a severity fails loudly instead of rendering `None`.
SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
GITHUB_COMMAND = {"error": "error", "warning": "warning", "info": "notice"}
# GitHub code scanning's own severity property; "recommendation" is its word for advice.
PROBLEM_SEVERITY = {"error": "error", "warning": "warning", "info": "recommendation"}

# A code -> Rule or code -> name mapping; reporters only need the name for titles.
RuleNames = Mapping[str, Union[Rule, str]]


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    """The one output order: path, line, column, then code (Finding.sort_key)."""
    return sorted(findings, key=Finding.sort_key)


def sorted_errors(errors: Iterable[FileError]) -> list[FileError]:
    return sorted(errors, key=lambda error: (error.path, error.message))


def sorted_skipped(skipped: Iterable[Skipped]) -> list[Skipped]:
    return sorted(skipped, key=lambda item: (item.path, item.reason))


def rule_title(code: str, name: str | None) -> str:
    """`ACL101 (unseeded-numpy)`, or the bare code when the name is unknown."""
    return f"{code} ({name})" if name else code


def rule_name(rules: RuleNames, code: str) -> str | None:
    entry = rules.get(code)
    if entry is None:
        return None
    return entry if isinstance(entry, str) else entry.name


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """`1 file`, `2 files`; `plural_form` for words like `info` that do not take an s."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {plural_form if plural_form is not None else noun + 's'}"


def severity_counts(findings: Iterable[Finding]) -> dict[str, int]:
    """Findings per severity, in SEVERITIES order (most severe first), zeros included."""
    counts = dict.fromkeys(SEVERITIES, 0)
    for finding in findings:
        counts[finding.severity] = counts.get(finding.severity, 0) + 1
    return counts


def message_with_fix(finding: Finding) -> str:
    """The message, with the fix on its own line, for reports that have no separate fix field."""
    return f"{finding.message}\nfix: {finding.fix}" if finding.fix else finding.message
