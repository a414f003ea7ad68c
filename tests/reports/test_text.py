"""The human report: compiler-style lines with their severity in words, fixes, errors, skipped files,
info findings under their own heading, and the summary."""

import re

from acclint.findings import FileError, Finding, ScanResult, Skipped
from acclint.reports.text import INFO_HEADING, render_text, summary_line

FINDING_LINE = re.compile(
    r"^(?P<path>[^:\s][^:]*):(?P<line>\d+):(?P<col>\d+): (?P<code>ACL\d{3}) (?P<severity>error|warning|info) "
    r"\[(?P<category>[a-z-]+)\] (?P<message>.+)$"
)
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def finding(path="train.py", line=1, column=1, *, rule="ACL101", severity="warning",
            category="seed", message="np.random used before seeding", fix=None):
    return Finding(rule, category, severity, path, line, column, line, column + 5, message, fix)


def test_each_finding_is_one_compiler_style_line():
    result = ScanResult(2, [finding("pkg/train.py", 40, 5, category="fused-op", message="m1"),
                            finding("a.py", 3, 2, rule="ACL202", category="determinism")])
    lines = render_text(result).splitlines()
    matches = [FINDING_LINE.match(line) for line in lines[:2]]
    assert all(matches), lines
    first = matches[1].groupdict()
    assert first == {"path": "pkg/train.py", "line": "40", "col": "5", "code": "ACL101", "severity": "warning",
                     "category": "fused-op", "message": "m1"}


def test_findings_are_sorted_by_path_line_column():
    result = ScanResult(2, [finding("b.py", 1, 1), finding("a.py", 10, 1),
                            finding("a.py", 9, 7), finding("a.py", 9, 2)])
    positions = [FINDING_LINE.match(line).group("path", "line", "col")
                 for line in render_text(result).splitlines() if FINDING_LINE.match(line)]
    assert positions == [("a.py", "9", "2"), ("a.py", "9", "7"), ("a.py", "10", "1"),
                         ("b.py", "1", "1")]


def test_fix_is_indented_under_its_finding_and_can_be_hidden():
    result = ScanResult(1, [finding(line=2, fix="call np.random.seed(0) first"),
                            finding(line=5, fix=None)])
    lines = render_text(result).splitlines()
    assert lines[1] == "    fix: call np.random.seed(0) first"
    assert FINDING_LINE.match(lines[0]).group("line") == "2"
    assert FINDING_LINE.match(lines[2]).group("line") == "5"  # no fix line for a None fix
    hidden = render_text(result, show_fix=False)
    assert "fix:" not in hidden
    assert len([line for line in hidden.splitlines() if FINDING_LINE.match(line)]) == 2


def test_multi_line_message_continues_indented():
    text = render_text(ScanResult(1, [finding(message="first\nsecond")]))
    lines = text.splitlines()
    assert FINDING_LINE.match(lines[0]).group("message") == "first"
    assert lines[1] == "    second"


def test_errors_and_skipped_files_are_listed():
    result = ScanResult(
        3,
        errors=[FileError("z.py", "syntax error at line 3: invalid syntax", "E999"),
                FileError("b.py", "not UTF-8", "E902")],
        skipped=[Skipped("data.bin", "binary file")],
    )
    lines = render_text(result).splitlines()
    assert lines[:3] == ["b.py: E902 error [io-error] not UTF-8",
                         "z.py: E999 error [syntax-error] syntax error at line 3: invalid syntax",
                         "data.bin: skipped: binary file"]
    assert lines[3] == ""  # a blank line before the summary
    assert lines[4] == summary_line(result)


def test_summary_counts_findings_by_severity_in_severity_order():
    findings = [finding(severity="info"), finding(severity="warning", line=2),
                finding(severity="error", line=3), finding(severity="warning", line=4),
                finding(severity="warning", line=5)]
    result = ScanResult(12, findings, [FileError("broken.py", "syntax error")])
    assert summary_line(result) == (
        "Found 5 findings (1 error, 3 warnings, 1 info) in 12 files; 1 file could not be read."
    )


def test_summary_singular_forms_and_omitted_zero_counts():
    assert summary_line(ScanResult(1, [finding()])) == "Found 1 finding (1 warning) in 1 file."
    two_info = ScanResult(2, [finding(severity="info"), finding(severity="info", line=2)])
    assert summary_line(two_info) == "Found 2 findings (2 info) in 2 files."


def test_summary_when_clean():
    assert summary_line(ScanResult(12)) == "All checks passed: 12 files scanned."
    assert render_text(ScanResult(12)) == "All checks passed: 12 files scanned."
    skipped = ScanResult(3, skipped=[Skipped("x.bin", "binary")])
    assert summary_line(skipped) == "All checks passed: 3 files scanned; 1 file skipped."


def test_unreadable_files_are_not_called_a_pass():
    result = ScanResult(4, errors=[FileError("a.py", "e1"), FileError("a.py", "e2"),
                                   FileError("b.py", "e3")])
    line = summary_line(result)
    assert not line.startswith("All checks passed")
    assert line == "No findings in 4 files; 2 files could not be read."


def test_color_only_when_asked_and_nothing_else_changes():
    result = ScanResult(2, [finding(fix="seed", severity="error"), finding(line=3)],
                        [FileError("b.py", "oops")], [Skipped("c.bin", "binary")])
    plain = render_text(result)
    colored = render_text(result, color=True)
    assert "\x1b" not in plain
    assert "\x1b[31m" in colored and "\x1b[33m" in colored  # error red, warning yellow
    assert ANSI.sub("", colored) == plain


def test_severity_is_a_word_on_every_line_and_info_comes_last_under_its_heading():
    """Without colour (NO_COLOR, CI logs) a reader tells advice from problems on every line: the severity
    is written after the code, and info findings follow everything else under their own heading."""
    result = ScanResult(3, [finding("a.py", 1, severity="info", rule="ACL102", fix="export PYTHONHASHSEED=0"),
                            finding("a.py", 2, severity="warning", rule="ACL201"),
                            finding("b.py", 5, severity="error", rule="ACL104"),
                            finding("c.py", 1, severity="info", rule="ACL607")],
                        [FileError("d.py", "syntax error", "E999")])
    lines = render_text(result).splitlines()
    severities = [(m.group("code"), m.group("severity")) for m in map(FINDING_LINE.match, lines) if m]
    assert severities == [("ACL201", "warning"), ("ACL104", "error"), ("ACL102", "info"), ("ACL607", "info")]
    heading = lines.index(INFO_HEADING)
    assert lines[heading - 1] == ""  # set apart from the problems above it
    assert lines.index("d.py: E999 error [syntax-error] syntax error") < heading  # a file not read is a problem
    assert all(FINDING_LINE.match(line).group("severity") == "info"
               for line in lines[heading + 1:] if FINDING_LINE.match(line))
    assert lines[heading + 2] == "    fix: export PYTHONHASHSEED=0"  # the fix stays under its info finding
    assert lines[-1] == "Found 4 findings (1 error, 1 warning, 2 info) in 3 files; 1 file could not be read."


def test_only_info_findings_start_with_their_heading():
    lines = render_text(ScanResult(1, [finding(severity="info")])).splitlines()
    assert lines[0] == INFO_HEADING and FINDING_LINE.match(lines[1]).group("severity") == "info"
    assert INFO_HEADING not in render_text(ScanResult(1, [finding()]))  # no heading without info


def test_colour_marks_the_severity_word_too():
    colored = render_text(ScanResult(1, [finding(severity="info")]), color=True)
    assert "\x1b[36mACL101 info\x1b[0m" in colored
