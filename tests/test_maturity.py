"""Rule maturity (ruff's preview): which rules run by default, and how measured precision decides it."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from acclint import cli
from acclint.config import Config, ConfigError, load_config, rule_enabled
from acclint.linter.maturity import MIN_JUDGED, MIN_JUDGED_NONE_RIGHT, Precision, maturity, precision_table
from acclint.reports import render_rule_list, render_rule_page
from acclint.rules import all_rules

RULES = {rule.code: rule for rule in all_rules()}
BENCHMARK = RULES["ACL202"]  # cudnn.benchmark = True: an explicit setting, reported in any file
TRAIN = "import torch\ntorch.backends.cudnn.benchmark = True\n"


class _PreviewBenchmark(type(BENCHMARK)):
    """ACL202 declared preview, as a new rule would be."""

    maturity = "preview"


def _figures(right, judged):
    return Precision(judged=judged, right=right, wrong=judged - right, debatable=0)


@pytest.mark.parametrize("declared, figures, expected", [
    ("stable", None, "stable"),                              # nothing measured: the declaration holds
    ("preview", None, "preview"),
    ("stable", _figures(8, 10), "preview"),                  # 80% over 10 judged: demoted
    ("preview", _figures(10, 10), "stable"),                 # 100% over 10 judged: earned stable
    ("stable", _figures(9, 10), "stable"),                   # exactly 90% is enough
    ("stable", _figures(1, MIN_JUDGED - 1), "stable"),       # too few judged to overrule
    ("stable", _figures(0, MIN_JUDGED_NONE_RIGHT), "preview"),  # ... unless none of them was right
    ("stable", _figures(0, MIN_JUDGED_NONE_RIGHT - 1), "stable"),
])
def test_measured_precision_overrules_the_declaration(declared, figures, expected):
    rule = type("R", (type(BENCHMARK),), {"maturity": declared})()
    table = {} if figures is None else {rule.code: figures}
    assert maturity(rule, table) == expected


def test_debatable_verdicts_decide_neither_way():
    rule = type("R", (type(BENCHMARK),), {"maturity": "preview"})()
    # 9 right, 1 wrong and 10 debatable: 90% of the decided verdicts, so stable.
    assert maturity(rule, {rule.code: Precision(judged=20, right=9, wrong=1, debatable=10)}) == "stable"
    # Debatable verdicts alone are not enough judged findings to overrule the declaration.
    assert maturity(rule, {rule.code: Precision(judged=10, right=2, wrong=0, debatable=8)}) == "preview"


def test_info_rules_keep_their_declaration_whatever_was_measured():
    info_rule = RULES["ACL102"]
    assert info_rule.severity == "info"
    assert maturity(info_rule, {"ACL102": _figures(0, 20)}) == info_rule.maturity


def test_preview_rules_run_only_when_asked_for():
    config = Config()
    assert not rule_enabled(config, "ACL202", "determinism", preview=True)
    assert rule_enabled(Config(preview=True), "ACL202", "determinism", preview=True)
    # Selected by its exact code: yes; by a prefix or its category: no (as ruff).
    assert rule_enabled(Config(select=["ACL202"]), "ACL202", "determinism", preview=True)
    assert not rule_enabled(Config(select=["ACL2"]), "ACL202", "determinism", preview=True)
    assert not rule_enabled(Config(select=["determinism"]), "ACL202", "determinism", preview=True)
    # Stable rules are unaffected.
    assert rule_enabled(config, "ACL202", "determinism", preview=False)


def test_preview_key_in_pyproject(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.acclint]\npreview = true\n")
    assert load_config(pyproject, explicit=False, known_codes=set(RULES)).preview is True
    pyproject.write_text('[tool.acclint]\npreview = "yes"\n')
    with pytest.raises(ConfigError, match="preview must be true or false"):
        load_config(pyproject, explicit=False, known_codes=set(RULES))


@pytest.fixture()
def preview_rule_set(monkeypatch):
    rules = [_PreviewBenchmark() if rule.code == "ACL202" else rule for rule in all_rules()]
    monkeypatch.setattr(cli, "_all_rules", lambda: rules)
    monkeypatch.setattr("acclint.linter.maturity.precision_table", lambda: {})
    monkeypatch.setattr("acclint.linter.maturity.proven_table", lambda: {})


def _codes(tmp_path, *args):
    (tmp_path / "train.py").write_text(TRAIN)
    result = CliRunner().invoke(cli.main, ["scan", str(tmp_path / "train.py"), "--format", "json", "--no-cache", *args])
    return {finding["rule"] for finding in json.loads(result.output)["findings"]}


def test_scan_leaves_a_preview_rule_out_by_default(tmp_path, preview_rule_set):
    assert "ACL202" not in _codes(tmp_path)


def test_scan_runs_a_preview_rule_with_preview_or_its_exact_code(tmp_path, preview_rule_set):
    assert "ACL202" in _codes(tmp_path, "--preview")
    assert "ACL202" in _codes(tmp_path, "--select", "ACL202")
    assert "ACL202" not in _codes(tmp_path, "--select", "ACL2")


def test_scan_runs_preview_rules_when_the_config_says_so(tmp_path, preview_rule_set):
    (tmp_path / "pyproject.toml").write_text("[tool.acclint]\npreview = true\n")
    assert "ACL202" in _codes(tmp_path)
    assert "ACL202" not in _codes(tmp_path, "--no-preview")


def test_rule_list_and_page_show_maturity_and_precision(monkeypatch):
    monkeypatch.setattr("acclint.linter.maturity.precision_table", lambda: {"ACL202": _figures(7, 10)})
    monkeypatch.setattr("acclint.linter.maturity.proven_table", lambda: {})  # measured before the proof split
    row = {r["code"]: r for r in json.loads(render_rule_list(all_rules(), fmt="json"))}["ACL202"]
    assert (row["maturity"], row["precision"]) == ("preview", "70% of 10 judged")
    page = render_rule_page(BENCHMARK)
    assert "Maturity: preview" in page and "7 right, 3 wrong, 0 debatable" in page


def test_the_packaged_precision_table_names_only_existing_rules():
    assert set(precision_table()) <= set(RULES)
    for code, figures in precision_table().items():
        assert figures.right + figures.wrong + figures.debatable == figures.judged, code


@pytest.mark.parametrize("overall, proven, expected", [
    (_figures(6, 10), _figures(9, 10), "stable"),    # proven findings at 90% decide, whatever the rest measure
    (_figures(10, 10), _figures(4, 10), "preview"),  # proven findings under 90%: preview
    (_figures(6, 10), _figures(3, 3), "preview"),    # too few proven judged: the overall figure decides
])
def test_a_rules_proven_findings_decide_its_maturity(overall, proven, expected):
    rule = type("R", (type(BENCHMARK),), {"maturity": "stable"})()
    assert maturity(rule, {rule.code: overall}, {rule.code: proven}) == expected


def test_reload_reads_a_rewritten_table(monkeypatch, tmp_path):
    from acclint.linter import maturity as maturity_module

    written = {"text": "[ACL202]\njudged = 10\nright = 2\nwrong = 8\ndebatable = 0\n"}

    class Table:
        def joinpath(self, name):
            return self

        def read_text(self, encoding):
            return written["text"]

    monkeypatch.setattr(maturity_module.resources, "files", lambda package: Table())
    maturity_module.reload()
    try:
        assert maturity(BENCHMARK) == "preview"
        written["text"] += "\n[ACL202.proven]\njudged = 6\nright = 6\nwrong = 0\ndebatable = 0\n"
        assert maturity(BENCHMARK) == "preview"  # still the table read before
        maturity_module.reload()
        assert maturity(BENCHMARK) == "stable"  # the proven findings' figures now decide
    finally:
        monkeypatch.undo()
        maturity_module.reload()


def test_unproven_findings_alone_never_decide_what_proven_ones_do():
    stable_rule = type("R", (type(BENCHMARK),), {"maturity": "stable"})()
    unproven_only = {stable_rule.code: Precision(judged=9, right=0, wrong=9, debatable=0)}
    no_proven = {stable_rule.code: Precision(judged=0, right=0, wrong=0, debatable=0)}
    # Nine unproven findings judged wrong, none proven: the declaration holds.
    assert maturity(stable_rule, unproven_only, no_proven) == "stable"
    # Without the proof split (an older table), every finding's figures decide as before.
    assert maturity(stable_rule, unproven_only, {}) == "preview"
    # A few proven findings (under MIN_JUDGED) leave all findings' figures to decide.
    few = {stable_rule.code: Precision(judged=2, right=0, wrong=2, debatable=0)}
    assert maturity(stable_rule, unproven_only, few) == "preview"


def test_figures_with_no_decided_verdict_say_so():
    assert Precision(judged=2, right=0, wrong=0, debatable=2).describe() == "2 judged, all debatable"
    assert Precision(judged=0, right=0, wrong=0, debatable=0).describe() == "none judged"
    assert Precision(judged=12, right=9, wrong=1, debatable=2).describe() == "90% of 10 judged"
