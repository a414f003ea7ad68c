"""The vocabulary the reporters share: order, severity tables, titles, counting words."""

import random

from acclint.findings import SEVERITIES, Finding
from acclint.linter.rulebase import Rule
from acclint.reports.common import (
    GITHUB_COMMAND,
    PROBLEM_SEVERITY,
    SARIF_LEVEL,
    message_with_fix,
    plural,
    rule_name,
    rule_title,
    severity_counts,
    sorted_findings,
)


def finding(path="train.py", line=1, column=1, rule="ACL101", severity="warning", fix=None):
    return Finding(rule, "seed", severity, path, line, column, line, column + 1, "msg", fix)


def test_every_severity_table_covers_exactly_the_known_severities():
    for table in (SARIF_LEVEL, GITHUB_COMMAND, PROBLEM_SEVERITY):
        assert set(table) == set(SEVERITIES)


def test_severity_tables_use_each_consumers_vocabulary():
    assert set(SARIF_LEVEL.values()) <= {"none", "note", "warning", "error"}
    assert set(GITHUB_COMMAND.values()) <= {"error", "warning", "notice"}
    assert set(PROBLEM_SEVERITY.values()) <= {"error", "warning", "recommendation"}
    assert SARIF_LEVEL["info"] == "note" and GITHUB_COMMAND["info"] == "notice"


def test_sorted_findings_orders_by_path_then_numeric_line_then_column_then_code():
    expected = [
        finding("a.py", 2, 1),
        finding("a.py", 10, 1),  # numeric, not "10" < "2"
        finding("b.py", 1, 3, rule="ACL101"),
        finding("b.py", 1, 3, rule="ACL202"),
        finding("b.py", 1, 12),
    ]
    shuffled = expected[:]
    random.Random(7).shuffle(shuffled)
    assert sorted_findings(shuffled) == expected


def test_rule_title_and_name_lookup():
    class Named(Rule):
        code, name = "ACL101", "unseeded-numpy"

    assert rule_title("ACL101", "unseeded-numpy") == "ACL101 (unseeded-numpy)"
    assert rule_title("ACL101", None) == "ACL101"
    assert rule_name({"ACL101": Named()}, "ACL101") == "unseeded-numpy"
    assert rule_name({"ACL101": "unseeded-numpy"}, "ACL101") == "unseeded-numpy"
    assert rule_name({}, "ACL101") is None


def test_plural_and_severity_counts():
    assert plural(1, "file") == "1 file"
    assert plural(0, "file") == "0 files"
    assert plural(3, "info", "info") == "3 info"
    counts = severity_counts([finding(severity="info"), finding(severity="error")] * 2)
    assert list(counts) == list(SEVERITIES)
    assert counts == {"error": 2, "warning": 0, "info": 2}


def test_message_with_fix_puts_the_fix_on_its_own_line():
    assert message_with_fix(finding()) == "msg"
    assert message_with_fix(finding(fix="seed it")) == "msg\nfix: seed it"
