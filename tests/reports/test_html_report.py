"""The HTML report without a browser: the checklist it fills in, snippets, the diff and runtime
sections, self-containment, and the `report` / `scan --format html` commands with bad input.

What the page does in a browser (filters, search, keys, no console errors) is in tests/browser/.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from acclint.cli import main
from acclint.config import Config
from acclint.linter.engine import scan
from acclint.reports.html import html_report
from acclint.reports.html_inputs import DIFF_UNAVAILABLE
from acclint.reports.html_groups import FOLD_OVER, SHOWN
from acclint.reports.html_model import FAIL, NOT_CHECKED, PASS, Found, ScanScope, breakable, build_report, snippet
from acclint.reports.html_runtime import bar_chart, runtime_view
from acclint.reports.json_report import report_dict
from acclint.reports.sources import SourceCache
from acclint.rules import all_rules
from html_report_inputs import (BENCHMARK_FILE, BENCHMARK_TEXT, capture_fingerprints, checklist_size, copy_examples,
                                diff_result, line_of)

CHECKLIST_KEYS = ["seed", "determinism", "hyperparameter", "fused-op", "contiguity", "mixed-precision",
                  "framework-default", "model-config", "debug-tooling", "parallel", "runtime"]
RULES = all_rules()


@pytest.fixture(scope="module")
def examples(tmp_path_factory) -> Path:
    return copy_examples(tmp_path_factory.mktemp("html"))


@pytest.fixture(scope="module")
def scanned(examples):
    return scan([examples], RULES, Config(), jobs=1)


@pytest.fixture(scope="module")
def fingerprints(tmp_path_factory) -> tuple[Path, Path]:
    return capture_fingerprints(tmp_path_factory.mktemp("fingerprints"))


def model(result, *, active=None, diff=None, runtime=None, command="report"):
    return build_report(scan=report_dict(result), scope=ScanScope(RULES, active), sources=SourceCache().lines,
                        diff=diff, runtime=runtime, command=command,
                        found=Found(result.programs, result.launch_scripts))


def items(report) -> dict:
    return {item.key: item for item in report.checklist}


# --- the checklist ----------------------------------------------------------------------------


def test_every_checklist_item_has_a_row_with_a_status_and_a_reason_when_not_checked(scanned):
    report = model(scanned)
    rows = items(report)
    assert list(rows)[: len(CHECKLIST_KEYS) - 1] == CHECKLIST_KEYS[:-1] and list(rows)[-1] == "runtime"
    for key in ("seed", "determinism"):  # the examples break both on purpose
        assert rows[key].status == FAIL
        assert rows[key].counts["warning"] == sum(1 for f in scanned.findings
                                                  if f.category == key and f.severity == "warning")
    assert rows["hyperparameter"].status == NOT_CHECKED
    assert "`--diff LEFT RIGHT`" in rows["hyperparameter"].reason
    assert rows["runtime"].status == NOT_CHECKED and "`--fingerprints A.json B.json`" in rows["runtime"].reason
    installed = {rule.category for rule in RULES}
    for key in ("fused-op", "contiguity", "mixed-precision", "framework-default", "debug-tooling"):
        if key in installed:  # the family has landed: it ran over the examples
            assert rows[key].status in (PASS, FAIL) and rows[key].rules
        else:
            assert rows[key].status == NOT_CHECKED and "no rule of this family is installed" in rows[key].reason


def test_score_is_passing_items_over_all_items(scanned, fingerprints):
    clean = [f for f in scanned.findings if f.category != "seed"]
    result = replace(scanned, findings=clean, errors=[])
    runtime = runtime_view(*_compare(fingerprints[0], fingerprints[0]))
    report = model(result, runtime=runtime)
    rows = items(report)
    assert rows["seed"].status == PASS and rows["runtime"].status == PASS
    passed = sum(1 for item in report.checklist if item.status == PASS)
    assert report.passed == passed and report.score == round(100 * passed / len(report.checklist))
    assert f"÷ all {checklist_size(all_rules())} checklist items" in report.formula


def test_deselected_family_is_not_checked_and_says_why(scanned):
    active = frozenset(rule.code for rule in RULES if rule.category != "seed")
    result = replace(scanned, findings=[f for f in scanned.findings if f.category != "seed"], errors=[])
    row = items(model(result, active=active))["seed"]
    assert row.status == NOT_CHECKED and "turned off" in row.reason


def test_a_family_of_preview_rules_is_not_checked_because_it_is_preview(examples, tmp_path):
    """Without `--preview` a family whose rules are all preview says so, not that the user turned it off;
    the count agrees with its verb (one rule: "is ... run it"; several: "are ... run them")."""
    from acclint.linter.maturity import is_preview

    families = {}
    for rule in RULES:
        families.setdefault(rule.category, []).append(is_preview(rule))
    preview_only = {family: len(flags) for family, flags in families.items() if all(flags)}
    assert preview_only, "the bundled rules are expected to hold a family whose rules are all preview"
    out = tmp_path / "report.html"
    assert CliRunner().invoke(main, ["report", str(examples), "-o", str(out)]).exit_code == 0
    page = out.read_text(encoding="utf-8")
    assert "turned off" not in page  # nothing was deselected
    for family, count in preview_only.items():
        row = re.search(rf'<tr[^>]*data-item="{family}".*?</tr>', page, re.S).group(0)
        expected = ("its rule is preview (<code>--preview</code> to run it)" if count == 1 else
                    f"its {count} rules are preview (<code>--preview</code> to run them)")
        assert f"<b>Not checked:</b> {expected}" in row, row
    with_preview = tmp_path / "preview.html"
    assert CliRunner().invoke(main, ["report", str(examples), "--preview", "-o", str(with_preview)]).exit_code == 0
    assert "are preview" not in with_preview.read_text(encoding="utf-8")


@pytest.mark.parametrize("preview, ignored, reason", [
    (3, 0, "its 3 rules are preview (`--preview` to run them)"),
    (1, 0, "its rule is preview (`--preview` to run it)"),
    (0, 1, "its rule was turned off (`--select` / `--ignore` / config)"),
    (0, 2, "its 2 rules were turned off (`--select` / `--ignore` / config)"),
    (1, 2, "1 of its 3 rules is preview (`--preview` to run it) and 2 were turned off (`--select` / `--ignore` / config)"),
    (2, 1, "2 of its 3 rules are preview (`--preview` to run them) and 1 was turned off (`--select` / `--ignore` / config)"),
])
def test_why_a_family_did_not_run_counts_right(scanned, preview, ignored, reason):
    family = [rule for rule in RULES if rule.category == "seed"][:preview + ignored]
    rules = family + [rule for rule in RULES if rule.category != "seed"]
    scope = ScanScope(rules, frozenset(r.code for r in rules if r.category != "seed"),
                      frozenset(r.code for r in family[:preview]))
    result = replace(scanned, findings=[f for f in scanned.findings if f.category != "seed"], errors=[])
    report = build_report(scan=report_dict(result), scope=scope, sources=SourceCache().lines,
                          found=Found(result.programs, result.launch_scripts))
    assert items(report)["seed"].reason == reason


def test_info_findings_alone_leave_an_item_passing(scanned):
    infos = [f for f in scanned.findings if f.severity == "info"]
    assert infos, "the examples are expected to have an info finding"
    category = infos[0].category
    result = replace(scanned, findings=[f for f in infos if f.category == category], errors=[])
    row = items(model(result))[category]
    assert row.status == PASS and row.counts["info"] >= 1


def test_a_finding_of_an_unknown_category_gets_its_own_row(scanned):
    finding = scanned.findings[0]
    odd = type(finding).from_dict({**finding.to_dict(), "category": "new-family"})
    report = model(replace(scanned, findings=[odd], errors=[]))
    assert items(report)["new-family"].status == FAIL


# --- snippets ---------------------------------------------------------------------------------


def test_snippet_numbers_lines_and_marks_exactly_the_span():
    lines = ["a = 1", "b = torch.f(x)", "c = 3", "d = 4"]
    html = str(snippet(lines, {"line": 2, "column": 5, "end_line": 2, "end_column": 15}))
    assert html.count('class="ln"') == 4
    assert re.findall(r"<mark>(.*?)</mark>", html) == ["torch.f(x)"]
    assert '<span class="hit"><span class="ln">2</span>b = <mark>' in html


def test_snippet_marks_every_line_of_a_multiline_span_and_escapes_source():
    lines = ["x = f(<a>,", "      b)", "y"]
    html = str(snippet(lines, {"line": 1, "column": 5, "end_line": 2, "end_column": 9}))
    assert re.findall(r"<mark>(.*?)</mark>", html) == ["f(&lt;a&gt;,", "      b)"]
    assert "<a>" not in html


def test_snippet_of_an_unreadable_file_or_a_line_past_the_end_is_empty():
    assert str(snippet(None, {"line": 1, "column": 1})) == ""
    assert str(snippet(["one line"], {"line": 9, "column": 1})) == ""


# --- the page ---------------------------------------------------------------------------------


def test_page_is_self_contained(scanned, examples):
    page = html_report(scanned, RULES, base_dir=examples.parent)
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r"""<(link|img|iframe|object|embed)\b|\bsrc\s*=\s*["']|@import|url\(""", page)
    assert not re.search(r"""href\s*=\s*["'](?!#)""", page)  # every link is to a place in the page


def test_page_lists_findings_with_source_and_unreadable_files(scanned, examples):
    page = html_report(scanned, RULES, base_dir=examples.parent, paths=[str(examples)])
    assert page.count('<article class="finding') == len(scanned.findings)
    line = line_of(examples / BENCHMARK_FILE, BENCHMARK_TEXT)
    card = re.search(r'<article class="finding[^>]*data-rule="ACL202".*?</article>', page, re.S).group(0)
    assert f'<span class="hit"><span class="ln">{line}</span>' in card and f"<mark>{BENCHMARK_TEXT}</mark>" in card
    assert 'href="#rule-ACL202"' in card and 'id="rule-ACL202"' in page
    assert 'id="errors"' in page and "broken.py" in page.split('id="errors"', 1)[1].split("</section>", 1)[0]


def test_diff_section_shows_values_lines_and_defaults(scanned, examples):
    diff = diff_result(examples)
    report = model(scanned, diff=diff)
    row = items(report)["hyperparameter"]
    assert row.status == FAIL and row.differences == 2 and row.evidence == "setup-diff"
    page = html_report(scanned, RULES, diff=diff)
    section = page.split('id="setup-diff"', 1)[1].split("</section>", 1)[0]
    beta = re.search(r'<tr class="diff-row" data-key="adam-beta2">(.*?)</tr>', section, re.S).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", beta, re.S)
    gpu_line = line_of(examples / "gpu" / "train.py", "betas=")
    assert cells[2] == "0.95" and cells[3].endswith(f"train.py:{gpu_line}") and cells[4] == "0.999"
    batch = re.search(r'data-key="global-batch-size">(.*?)</tr>', section, re.S).group(1)
    assert re.findall(r"<td[^>]*>(.*?)</td>", batch, re.S)[5] == "default"
    assert "4 settings agree" in section


def _compare(left: Path, right: Path):
    from acclint.reports.html_inputs import load_comparison

    return load_comparison(left, right)


def test_runtime_view_from_real_fingerprints(fingerprints):
    result, left, right = _compare(*fingerprints)
    view = runtime_view(result, left, right)
    assert view["ok"] is False
    # The eps difference shows first as the loss, or as the module setting where the runtime records those.
    cause = next(m for m in result.to_dict()["mismatches"] if not m.get("consequence_of"))
    assert view["first_cause"]["kind"] == cause["kind"] in ("loss", "module-config")
    stages = {row["stage"]: row["status"] for row in view["stages"]}
    assert stages.get("weights") == "same" and stages.get("optimizer") == "same"
    # A stage that differs never reads as all equal ("DIFFERS" above "1 setting(s) of 1 module(s) equal").
    settings = next(row for row in view["stages"] if row["stage"] == "settings")
    assert settings["status"] == "differs" and settings["note"].startswith("0 of 1 setting(s)")
    assert "differs" in stages.values()
    titles = [chart["title"] for chart in view["charts"]]
    assert any(title.startswith("Gradient norms") for title in titles)
    assert not any(title.startswith("Initial weights") for title in titles)  # identical weights: no chart
    grads = next(c for c in view["charts"] if c["title"].startswith("Gradient norms"))
    assert all(bar["differs"] for bar in grads["bars"]) and grads["threshold_x"] is not None


def test_first_cause_skips_mismatches_that_follow_from_an_earlier_one():
    compare_json = {"version": 1, "ok": False, "mismatches": [
        {"kind": "update", "name": "loss-after-step", "left": 1.21, "right": 1.19, "message": "after",
         "consequence_of": "optimizer-hparam"},
        {"kind": "optimizer-hparam", "name": "adam-beta2", "left": 0.95, "right": 0.999, "message": "beta2"},
        {"kind": "module-config", "name": "norm.eps", "left": 1e-5, "right": 1e-6, "message": "eps"},
    ]}
    view = runtime_view(compare_json, "a.json", "b.json")
    assert view["first_cause"]["name"] == "adam-beta2"
    # Without stages, one row per kind, whatever the kinds are.
    assert [row["stage"] for row in view["stages"]] == ["update", "optimizer-hparam", "module-config"]
    assert "follow from an earlier difference" in view["stages"][0]["note"]


def test_bar_chart_is_left_out_when_nothing_differs_and_orders_largest_first():
    assert bar_chart("t", [("a", 1.0, 1.0, False)], None, "x") is None
    chart = bar_chart("t", [("a", 1.0, 1.001, True), ("b", 1.0, 2.0, True), ("c", 0.0, 0.0, False)], 1e-5, "x")
    assert [bar["name"] for bar in chart["bars"]] == ["b", "a", "c"]
    assert chart["bars"][0]["width"] > chart["bars"][1]["width"] > chart["bars"][2]["width"] == 0


# --- the commands -----------------------------------------------------------------------------


def test_report_command_writes_one_page_with_every_checklist_item(examples, fingerprints, tmp_path):
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(examples), "--fingerprints", *map(str, fingerprints),
                                       "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    for key in CHECKLIST_KEYS:
        assert f'data-item="{key}"' in page
    assert 'id="runtime"' in page and 'id="first-cause"' in page and "<svg" in page
    assert "1 file could not be read" in result.output


def test_scan_format_html_keeps_the_scan_exit_code(examples, tmp_path):
    out = tmp_path / "scan.html"
    result = CliRunner().invoke(main, ["scan", str(examples / "gpu"), "--format", "html", "-o", str(out)])
    assert result.exit_code == 1  # findings at warning
    page = out.read_text(encoding="utf-8")
    assert page.lstrip().startswith("<!DOCTYPE html>") and "use <code>acclint report --diff LEFT RIGHT</code>" in page


@pytest.mark.parametrize("case", ["missing-folder", "foreign-fingerprint", "future-fingerprint", "missing-diff-side"])
def test_bad_input_exits_2_with_a_clear_message(case, examples, fingerprints, tmp_path):
    out = tmp_path / "report.html"
    args = ["report", str(examples), "-o", str(out)]
    if case == "missing-folder":
        args[-1], expected = str(tmp_path / "nowhere" / "report.html"), "folder"
    elif case == "foreign-fingerprint":
        other = tmp_path / "msprobe.json"
        other.write_text(json.dumps({"task": "statistics", "level": "L1", "data": {}}), encoding="utf-8")
        args += ["--fingerprints", str(other), str(fingerprints[1])]
        expected = "not an acclint fingerprint"
    elif case == "future-fingerprint":
        newer = tmp_path / "newer.json"
        data = json.loads(Path(fingerprints[0]).read_text(encoding="utf-8"))
        newer.write_text(json.dumps({**data, "version": 99}), encoding="utf-8")
        args += ["--fingerprints", str(newer), str(fingerprints[1])]
        expected = "version 99"
    else:
        args += ["--diff", str(examples / "gpu"), str(tmp_path / "no-such-npu")]
        expected = "no-such-npu: no such file or folder"
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert expected in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_diff_without_the_setups_package_says_it_is_not_available(examples, tmp_path, monkeypatch):
    # A build without acclint.setups (None in sys.modules makes its import fail).
    monkeypatch.setitem(sys.modules, "acclint.setups", None)
    result = CliRunner().invoke(main, ["report", str(examples), "--diff", str(examples / "gpu"), str(examples / "npu"),
                                       "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 2 and DIFF_UNAVAILABLE in result.output


def test_diff_end_to_end_through_acclint_setups(examples, tmp_path):
    pytest.importorskip("acclint.setups", reason="acclint diff (acclint.setups) has not landed in this build")
    out = tmp_path / "r.html"
    result = CliRunner().invoke(main, ["report", str(examples), "--diff", str(examples / "gpu" / "train.py"),
                                       str(examples / "npu" / "train.py"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    section = out.read_text(encoding="utf-8").split('id="setup-diff"', 1)[1].split("</section>", 1)[0]
    assert 'data-key="adam-beta2"' in section  # the examples' betas differ: (0.9, 0.95) vs (0.9, 0.999)


def test_rules_with_the_worst_and_most_findings_come_first(scanned):
    report = model(scanned)
    rank = {"error": 0, "warning": 1, "info": 2}

    def order(groups):
        return [(rank[g.severity], -len(g.findings)) for g in groups]

    assert order(report.by_rule) == sorted(order(report.by_rule))
    assert {g.rule for g in report.by_rule} == {f.rule for f in scanned.findings}
    assert sum(len(g.findings) for g in report.by_rule) == len(scanned.findings)
    for group in report.groups:
        assert order(group.rules) == sorted(order(group.rules))


# --- what the scan found, and repeats folded ----------------------------------------------------


def test_the_page_says_how_many_programs_and_launch_scripts_it_found(scanned, examples):
    programs = {"gpu/train.py", "npu/train.py", "mindspore/train_ms.py"}
    assert {p.split("examples/", 1)[1] for p in scanned.programs} == programs
    assert {p.split("examples/", 1)[1] for p in scanned.launch_scripts} == {"gpu/run_gpu.sh", "npu/run_npu.sh"}
    page = html_report(scanned, RULES)
    assert re.search(r'id="found">3 training programs and 2 launch scripts found\.<', page)


def test_a_launch_script_whose_program_is_missing_checks_nothing(tmp_path):
    # A folder with only a launch script: the train.py it starts does not exist.
    (tmp_path / "run.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node 8 train.py --seed 1\n", encoding="utf-8")
    result = scan([tmp_path], RULES, Config(), jobs=1)
    assert result.programs == [] and len(result.launch_scripts) == 1
    report = model(result)
    for item in report.checklist:
        assert item.status == NOT_CHECKED, item.key
    rows = items(report)
    assert rows["seed"].reason == "no training program was found among the files scanned"
    assert report.score == 0 and report.passed == 0
    page = html_report(result, RULES)
    assert "0 training programs and 1 launch script found" in page
    assert '<span class="badge pass">' not in page


def test_a_program_beside_its_launch_script_is_counted_once(tmp_path, examples):
    shutil.copytree(examples / "gpu", tmp_path / "gpu")
    result = scan([tmp_path / "gpu" / "run_gpu.sh"], RULES, Config(), jobs=1)
    assert [Path(p).name for p in result.programs] == ["train.py"]  # found on disk, beside the script
    assert items(model(result))["seed"].status != NOT_CHECKED


def test_repeated_findings_of_one_rule_are_folded_under_it(examples, tmp_path):
    # Eight copies of one recipe: each rule it breaks repeats eight times.
    for n in range(8):
        shutil.copytree(examples / "gpu", tmp_path / f"recipe_{n}")
    result = scan([tmp_path], RULES, Config(), jobs=1)
    report = model(result)
    repeated = [g for g in report.by_rule if len(g.findings) > FOLD_OVER]
    assert repeated, "the copies repeat at least one rule"
    for group in repeated:
        assert len(group.shown) == SHOWN and len(group.shown) + len(group.folded) == len(group.findings)
        assert group.files == 8 and group.where == "in 8 files"
    page = html_report(result, RULES)
    assert page.count('<article class="finding') == len(result.findings)  # every finding is still in the page
    group = repeated[0]
    block = page.split(f'id="by-{group.rule}"', 1)[1].split('<div class="rule-group"', 1)[0]
    shown, folded = block.split('<details class="more">', 1)
    assert shown.count("<article") == SHOWN and folded.count("<article") == len(group.findings) - SHOWN
    assert f"<summary>{len(group.findings) - SHOWN} more {group.rule} findings" in folded
    summary = page.split('id="by-rule"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'<tr data-rule="(ACL\d+)">.*?<td class="n">(\d+)</td><td class="n">(\d+)</td>', summary)
    assert [(code, int(n)) for code, n, _ in rows] == [(g.rule, len(g.findings)) for g in report.by_rule]


def test_paths_wrap_at_slashes_only():
    assert str(breakable("a/b<c>/d.py")) == "a/<wbr>b&lt;c&gt;/<wbr>d.py"
