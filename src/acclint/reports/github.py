"""GitHub Actions workflow commands: each finding becomes an annotation on the PR diff.

Format and escaping follow the runner's rules (actions/toolkit `command.ts`):
`::warning file=F,line=L,col=C,endLine=L2,endColumn=C2,title=T::message`.
"""

from __future__ import annotations

from acclint.findings import Finding, ScanResult
from acclint.reports.common import (
    GITHUB_COMMAND,
    RuleNames,
    message_with_fix,
    rule_name,
    rule_title,
    sorted_errors,
    sorted_findings,
    sorted_skipped,
)


def escape_data(text: str) -> str:
    # `%` first, or the escapes themselves would be escaped again.
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    # Properties are `key=value` pairs split on `,` and ended by `::`, so both are escaped too.
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(kind: str, properties: dict[str, object], message: str) -> str:
    props = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items())
    return f"::{kind} {props}::{escape_data(message)}"


def _location(finding: Finding) -> dict[str, object]:
    if finding.end_line == finding.line:
        return {
            "file": finding.path,
            "line": finding.line,
            "col": finding.column,
            "endLine": finding.end_line,
            "endColumn": finding.end_column,
        }
    # The runner rejects columns on a multi-line range, so such a finding keeps only its lines.
    return {"file": finding.path, "line": finding.line, "endLine": finding.end_line}


def render_github(result: ScanResult, rules: RuleNames) -> str:
    """One workflow command per finding, one `::error` per unreadable file, one `::notice` per skipped file.

    `rules` maps codes to `Rule`s or names, for titles like `ACL101 (unseeded-numpy)`.
    """
    commands = []
    for finding in sorted_findings(result.findings):
        properties = _location(finding)
        properties["title"] = rule_title(finding.rule, rule_name(rules, finding.rule))
        kind = GITHUB_COMMAND[finding.severity]
        commands.append(_command(kind, properties, message_with_fix(finding)))
    for error in sorted_errors(result.errors):
        title = f"acclint {rule_title(error.code, error.name)}"
        commands.append(_command("error", {"file": error.path, "title": title}, error.message))
    for item in sorted_skipped(result.skipped):  # a notice, so a PR shows that a file went unchecked
        commands.append(_command("notice", {"file": item.path, "title": "acclint"}, f"skipped: {item.reason}"))
    return "\n".join(commands)
