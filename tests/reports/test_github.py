"""GitHub Actions workflow commands: format, severity mapping and the runner's escaping."""

import re

import pytest

from acclint.findings import FileError, Finding, ScanResult
from acclint.linter.rulebase import Rule
from acclint.reports.github import escape_data, escape_property, render_github

COMMAND = re.compile(r"^::(?P<kind>error|warning|notice) (?P<props>[^:]*)::(?P<message>.*)$")


class UnseededNumpy(Rule):
    code = "ACL101"
    name = "unseeded-numpy"


def finding(path="train.py", line=40, column=5, end_line=40, end_column=30, *, rule="ACL101",
            severity="warning", message="np.random used before seeding", fix=None):
    return Finding(rule, "seed", severity, path, line, column, end_line, end_column, message, fix)


def unescape(text: str) -> str:
    # The runner's decoding, for round-trip checks.
    for escaped, raw in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(escaped, raw)
    return text


def parse(line: str) -> tuple[str, dict, str]:
    match = COMMAND.match(line)
    assert match, line
    props = dict(pair.split("=", 1) for pair in match["props"].split(","))
    return match["kind"], {k: unescape(v) for k, v in props.items()}, unescape(match["message"])


def test_annotation_carries_location_and_title():
    output = render_github(ScanResult(1, [finding()]), {"ACL101": UnseededNumpy()})
    assert output.splitlines()[0].startswith(
        "::warning file=train.py,line=40,col=5,endLine=40,endColumn=30,"
        "title=ACL101 (unseeded-numpy)::")
    kind, props, message = parse(output)
    assert kind == "warning"
    assert props == {"file": "train.py", "line": "40", "col": "5", "endLine": "40",
                     "endColumn": "30", "title": "ACL101 (unseeded-numpy)"}
    assert message == "np.random used before seeding"


@pytest.mark.parametrize("severity, kind", [("error", "error"), ("warning", "warning"),
                                            ("info", "notice")])
def test_severity_maps_to_command(severity, kind):
    output = render_github(ScanResult(1, [finding(severity=severity)]), {})
    assert parse(output)[0] == kind


def test_title_from_a_name_mapping_or_bare_code_when_unknown():
    result = ScanResult(1, [finding(), finding(rule="ACL999", line=41)])
    lines = render_github(result, {"ACL101": "unseeded-numpy"}).splitlines()
    assert parse(lines[0])[1]["title"] == "ACL101 (unseeded-numpy)"
    assert parse(lines[1])[1]["title"] == "ACL999"


def test_escaping_follows_the_runner():
    assert escape_data("100%\r\nx:y,z") == "100%25%0D%0Ax:y,z"
    assert escape_property("100%\r\nx:y,z") == "100%25%0D%0Ax%3Ay%2Cz"
    assert escape_data("%0A") == "%250A"  # `%` escaped first, never double-decoded


def test_hostile_paths_and_messages_round_trip_on_one_line():
    nasty = finding(path="dir,with:odd%/t r.py", message="50% worse\nline two: a,b\r",
                    fix="set x: 1, y: 2")
    output = render_github(ScanResult(1, [nasty]), {"ACL101": "unseeded-numpy"})
    assert len(output.splitlines()) == 1
    _, props, message = parse(output)
    assert props["file"] == "dir,with:odd%/t r.py"
    assert message == "50% worse\nline two: a,b\r\nfix: set x: 1, y: 2"


def test_multi_line_ranges_drop_columns():
    # The runner rejects col/endColumn when line and endLine differ.
    output = render_github(ScanResult(1, [finding(line=3, end_line=7)]), {})
    props = parse(output)[1]
    assert props["line"] == "3" and props["endLine"] == "7"
    assert "col" not in props and "endColumn" not in props


def test_findings_sorted_then_file_errors():
    result = ScanResult(3, [finding("b.py", 1), finding("a.py", 9), finding("a.py", 10)],
                        [FileError("broken.py", "syntax error at line 3: x, y", "E999")])
    lines = render_github(result, {}).splitlines()
    assert [(parse(l)[1]["file"], parse(l)[1].get("line")) for l in lines] == [
        ("a.py", "9"), ("a.py", "10"), ("b.py", "1"), ("broken.py", None)]
    kind, props, message = parse(lines[-1])
    assert kind == "error" and props["file"] == "broken.py"
    assert props["title"] == "acclint E999 (syntax-error)"
    assert message == "syntax error at line 3: x, y"


def test_nothing_to_report_is_empty():
    assert render_github(ScanResult(5), {}) == ""
