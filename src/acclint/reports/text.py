"""The human format: one line per finding, compiler style, so editors and terminals link them.

Every finding's line names its severity in words (`ACL205 warning [determinism]`), so CI logs and
`NO_COLOR` terminals tell advice from problems without colour; info findings, which are advice,
come after everything else under their own heading, so a reader meets what fails the run first.
"""

from __future__ import annotations

from acclint.findings import FileError, Finding, ScanResult
from acclint.reports.common import (
    plural,
    severity_counts,
    sorted_errors,
    sorted_findings,
    sorted_skipped,
)

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_DIM = "\x1b[2m"
_SEVERITY_COLOR = {"error": "\x1b[31m", "warning": "\x1b[33m", "info": "\x1b[36m"}
_GREEN = "\x1b[32m"
_INDENT = "    "
# The severity that is advice: listed last, under INFO_HEADING.
ADVICE = "info"
INFO_HEADING = "Info (advice):"


def _paint(text: str, code: str, enabled: bool) -> str:
    return f"{code}{text}{_RESET}" if enabled and code else text


def _continued(text: str) -> str:
    # Indent any further lines, so only a finding's first line starts with `path:line:col:`.
    return text.replace("\r\n", "\n").replace("\n", "\n" + _INDENT)


def _marked(code: str, severity: str, color: bool) -> str:
    """`ACL205 warning`: the code and its severity word, coloured by severity when colour is on."""
    return _paint(f"{code} {severity}", _SEVERITY_COLOR.get(severity, ""), color)


def finding_lines(finding: Finding, *, color: bool, show_fix: bool) -> list[str]:
    """A finding's first line (`path:line:col: CODE severity [category] message`) and the indented
    lines under it (the fix). A note a finding carries goes here, under its first line."""
    where = _paint(f"{finding.path}:{finding.line}:{finding.column}:", _BOLD, color)
    category = _paint(f"[{finding.category}]", _DIM, color)
    lines = [f"{where} {_marked(finding.rule, finding.severity, color)} {category} {_continued(finding.message)}"]
    if show_fix and finding.fix:
        lines.append(f"{_INDENT}{_paint('fix:', _GREEN, color)} {_continued(finding.fix)}")
    return lines


def error_line(error: FileError, *, color: bool) -> str:
    """`broken.py: E999 error [syntax-error] message`: a file that could not be read or parsed."""
    where = _paint(f"{error.path}:", _BOLD, color)
    name = _paint(f"[{error.name}]", _DIM, color)
    return f"{where} {_marked(error.code, 'error', color)} {name} {_continued(error.message)}"


def render_text(result: ScanResult, *, color: bool = False, show_fix: bool = True) -> str:
    """Findings (errors and warnings), per-file errors, skipped files, then info findings under
    their heading, and a summary line (no trailing newline).

    ANSI colour only when `color` is true: the CLI decides (tty, NO_COLOR), not the reporter.
    """
    findings = sorted_findings(result.findings)
    lines: list[str] = []
    for finding in findings:
        if finding.severity != ADVICE:
            lines += finding_lines(finding, color=color, show_fix=show_fix)
    lines += [error_line(error, color=color) for error in sorted_errors(result.errors)]
    lines += [f"{_paint(f'{item.path}:', _BOLD, color)} skipped: {item.reason}" for item in sorted_skipped(result.skipped)]
    advice = [finding for finding in findings if finding.severity == ADVICE]
    if advice:
        # A blank line and a heading: advice never reads as one more warning.
        lines += ([""] if lines else []) + [_paint(INFO_HEADING, _BOLD, color)]
        for finding in advice:
            lines += finding_lines(finding, color=color, show_fix=show_fix)

    summary = _paint(summary_line(result), _BOLD, color)
    # A blank line keeps the summary from reading as one more finding.
    return "\n".join(lines + ["", summary]) if lines else summary


def summary_line(result: ScanResult) -> str:
    """`Found 5 findings (1 error, 3 warnings, 1 info) in 12 files; 1 file could not be read.`"""
    files = plural(result.files_scanned, "file")
    if result.findings:
        counts = severity_counts(result.findings)
        breakdown = ", ".join(
            plural(count, severity, "info" if severity == "info" else None)
            for severity, count in counts.items()
            if count
        )
        head = f"Found {plural(len(result.findings), 'finding')} ({breakdown}) in {files}"
    elif result.errors:
        # Not "All checks passed": a file we could not read was not checked.
        head = f"No findings in {files}"
    else:
        head = f"All checks passed: {files} scanned"
    tail = ""
    if result.errors:
        unread = len({error.path for error in result.errors})
        tail += f"; {plural(unread, 'file')} could not be read"
    if result.skipped:
        tail += f"; {plural(len(result.skipped), 'file')} skipped"
    return head + tail + "."
