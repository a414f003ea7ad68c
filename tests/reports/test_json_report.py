"""`--format json` must match the documented contract exactly (keys, order, types)."""

import json
import re

from acclint.findings import CATEGORIES, PREMISES, SEVERITIES, FileError, Finding, Premise, ScanResult, Skipped
from acclint.reports.json_report import render_json

CONTRACT_TOP = ["version", "files_scanned", "findings", "errors"]
CONTRACT_FINDING = ["rule", "category", "severity", "path", "line", "column", "end_line",
                    "end_column", "message", "fix", "proven", "premises"]


def sample() -> ScanResult:
    return ScanResult(
        12,
        [
            Finding("ACL202", "determinism", "error", "train.py", 41, 1, 41, 40,
                    "cudnn.benchmark = True picks kernels by timing", None,
                    premises=(Premise("trains", True, "`opt.step()` at train.py:50"),
                              Premise("executes", False, "train.py:41 is not reached from train.py"))),
            Finding("ACL101", "seed", "warning", "train.py", 40, 5, 40, 30,
                    "np.random used before np.random.seed — «x»", "np.random.seed(0)"),
            Finding("ACL301", "fused-op", "info", "a/model.py", 7, 9, 9, 2, "fused", None),
        ],
        [FileError("broken.py", "syntax error at line 3: invalid syntax", "E999")],
        [Skipped("weights.bin", "binary file")],
    )


def test_top_level_keys_and_order_follow_the_contract():
    data = json.loads(render_json(sample()))
    assert list(data)[: len(CONTRACT_TOP)] == CONTRACT_TOP
    assert set(data) <= set(CONTRACT_TOP) | {"skipped"}  # the one allowed extra key
    assert data["version"] == 1
    assert data["files_scanned"] == 12
    assert data["skipped"] == [{"path": "weights.bin", "reason": "binary file"}]


def test_findings_have_exactly_the_contract_keys_and_types():
    data = json.loads(render_json(sample()))
    assert len(data["findings"]) == 3
    for item in data["findings"]:
        assert list(item) == CONTRACT_FINDING
        assert re.fullmatch(r"ACL\d{3}", item["rule"])
        assert item["category"] in CATEGORIES
        assert item["severity"] in SEVERITIES
        for key in ("line", "column", "end_line", "end_column"):
            assert isinstance(item[key], int) and item[key] >= 1
        assert isinstance(item["message"], str)
        assert item["fix"] is None or isinstance(item["fix"], str)
        assert isinstance(item["proven"], bool)
        for premise in item["premises"]:
            assert list(premise) == ["premise", "proven", "evidence"]
            assert premise["premise"] in PREMISES and isinstance(premise["evidence"], str)


def test_a_finding_is_proven_only_when_every_premise_is():
    data = json.loads(render_json(sample()))
    benchmark = data["findings"][2]
    assert benchmark["rule"] == "ACL202" and benchmark["proven"] is False
    assert [p["proven"] for p in benchmark["premises"]] == [True, False]
    assert data["findings"][0]["premises"] == [] and data["findings"][0]["proven"] is False


def test_values_round_trip_and_findings_are_sorted():
    data = json.loads(render_json(sample()))
    assert [(f["path"], f["line"]) for f in data["findings"]] == [
        ("a/model.py", 7), ("train.py", 40), ("train.py", 41)]
    seed = data["findings"][1]
    assert seed["message"] == "np.random used before np.random.seed — «x»"
    assert seed["fix"] == "np.random.seed(0)"
    assert data["findings"][2]["fix"] is None
    assert data["errors"] == [{"path": "broken.py",
                               "message": "syntax error at line 3: invalid syntax", "code": "E999"}]


def test_indent_two_and_readable_unicode():
    text = render_json(sample())
    assert text.splitlines()[1].startswith('  "version"')
    assert "«x»" in text  # not \u-escaped
    assert not text.endswith("\n")


def test_empty_scan():
    assert json.loads(render_json(ScanResult())) == {
        "version": 1, "files_scanned": 0, "findings": [], "errors": [], "skipped": []}
