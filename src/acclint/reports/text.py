"""The human format: one line per finding, compiler style, so editors and terminals link them."""

from __future__ import annotations

from acclint.findings import ScanResult
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


def _paint(text: str, code: str, enabled: bool) -> str:
    return f"{code}{text}{_RESET}" if enabled and code else text


def _continued(text: str) -> str:
    # Indent any further lines, so only a finding's first line starts with `path:line:col:`.
    return text.replace("\r\n", "\n").replace("\n", "\n" + _INDENT)


def render_text(result: ScanResult, *, color: bool = False, show_fix: bool = True) -> str:
    """Findings, per-file errors, skipped files and a summary line (no trailing newline).

    ANSI colour only when `color` is true: the CLI decides (tty, NO_COLOR), not the reporter.
    """
    lines: list[str] = []
    for finding in sorted_findings(result.findings):
        where = _paint(f"{finding.path}:{finding.line}:{finding.column}:", _BOLD, color)
        code = _paint(finding.rule, _SEVERITY_COLOR.get(finding.severity, ""), color)
        category = _paint(f"[{finding.category}]", _DIM, color)
        lines.append(f"{where} {code} {category} {_continued(finding.message)}")
        if show_fix and finding.fix:
            lines.append(f"{_INDENT}{_paint('fix:', _GREEN, color)} {_continued(finding.fix)}")
    for error in sorted_errors(result.errors):
        where = _paint(f"{error.path}:", _BOLD, color)
        code = _paint(error.code, _SEVERITY_COLOR["error"], color)
        name = _paint(f"[{error.name}]", _DIM, color)
        lines.append(f"{where} {code} {name} {_continued(error.message)}")
    for item in sorted_skipped(result.skipped):
        lines.append(f"{_paint(f'{item.path}:', _BOLD, color)} skipped: {item.reason}")

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
