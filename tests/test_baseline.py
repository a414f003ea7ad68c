"""`acclint scan --write-baseline FILE` and `--baseline FILE`, through the command."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from acclint.cli import main

TRAIN = '''\
import torch


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    model = torch.nn.Linear(4, 1)
    model(torch.ones(2, 4)).sum().backward()
'''


def _run(root: Path, monkeypatch, *args: str, cwd: Path = None):
    monkeypatch.chdir(cwd or root)
    # ACL202 is the probe; preview on, so the test does not depend on the measured maturity.
    return CliRunner().invoke(main, ["scan", "--no-cache", "--preview", *args])


def _rules(done) -> list:
    return sorted(f["rule"] for f in json.loads(done.stdout)["findings"])


def test_baseline_hides_todays_findings_and_reports_new_ones(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(TRAIN)
    before = _run(tmp_path, monkeypatch, ".", "--format", "json")
    assert before.exit_code == 1 and "ACL202" in _rules(before)

    written = _run(tmp_path, monkeypatch, ".", "--write-baseline", "acclint-baseline.json")
    assert written.exit_code == 0, written.output
    recorded = json.loads((tmp_path / "acclint-baseline.json").read_text())["findings"]
    assert sorted(e["rule"] for e in recorded) == _rules(before)
    assert all(e["path"] == "train.py" and e["fingerprint"] for e in recorded)

    quiet = _run(tmp_path, monkeypatch, ".", "--baseline", "acclint-baseline.json", "--format", "json")
    assert quiet.exit_code == 0 and _rules(quiet) == []

    # Lines added above the findings: same findings, other line numbers, still in the baseline.
    (tmp_path / "train.py").write_text('"""Now with a docstring."""\nimport os\n\n' + TRAIN)
    moved = _run(tmp_path, monkeypatch, ".", "--baseline", "acclint-baseline.json", "--format", "json")
    assert moved.exit_code == 0 and _rules(moved) == []

    # A new problem is reported, alone.
    text = (tmp_path / "train.py").read_text().replace(
        "    model = torch.nn.Linear(4, 1)\n", "    model = torch.nn.Linear(4, 1)\n    drop = torch.nn.Dropout(p=0.1)\n")
    (tmp_path / "train.py").write_text(text)
    new = _run(tmp_path, monkeypatch, ".", "--baseline", "acclint-baseline.json", "--format", "json")
    assert _rules(new) == ["ACL209"]
    assert new.exit_code == 0  # ACL209 is info: below the default --fail-on warning
    assert _run(tmp_path, monkeypatch, ".", "--baseline", "acclint-baseline.json", "--fail-on", "info").exit_code == 1


def test_fixed_findings_drop_out_when_the_baseline_is_rewritten(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(TRAIN)
    _run(tmp_path, monkeypatch, ".", "--write-baseline", "base.json")
    first = {e["rule"] for e in json.loads((tmp_path / "base.json").read_text())["findings"]}
    (tmp_path / "train.py").write_text(TRAIN.replace("benchmark = True", "benchmark = False"))
    _run(tmp_path, monkeypatch, ".", "--baseline", "base.json", "--write-baseline", "base.json")
    second = {e["rule"] for e in json.loads((tmp_path / "base.json").read_text())["findings"]}
    assert first - second == {"ACL202"} and second


def test_baseline_paths_are_relative_to_the_baseline_file(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "sub" / "train.py").write_text(TRAIN)
    _run(project, monkeypatch, "sub", "--write-baseline", "base.json")
    assert {e["path"] for e in json.loads((project / "base.json").read_text())["findings"]} == {"sub/train.py"}
    elsewhere = _run(project, monkeypatch, "train.py", "--baseline", "../base.json", "--format", "json",
                     cwd=project / "sub")
    assert elsewhere.exit_code == 0 and _rules(elsewhere) == []


def test_baseline_fingerprints_are_the_sarif_fingerprints(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(TRAIN)
    _run(tmp_path, monkeypatch, ".", "--write-baseline", "base.json")
    sarif = json.loads(_run(tmp_path, monkeypatch, ".", "--format", "sarif").stdout)
    from_sarif = {(r["ruleId"], next(iter(r["partialFingerprints"].values()))) for r in sarif["runs"][0]["results"]}
    from_baseline = {(e["rule"], e["fingerprint"]) for e in json.loads((tmp_path / "base.json").read_text())["findings"]}
    assert from_baseline == from_sarif


def test_a_bad_baseline_is_a_clear_usage_error(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(TRAIN)
    for name, content in (("missing.json", None), ("broken.json", "{"), ("other.json", '{"version": 9}'),
                          ("entries.json", '{"version": 1, "findings": [{"rule": "ACL202"}]}')):
        if content is not None:
            (tmp_path / name).write_text(content)
        done = _run(tmp_path, monkeypatch, ".", "--baseline", name)
        assert done.exit_code == 2, done.output
        assert f"baseline {name}" in done.output and "Traceback" not in done.output


def test_fix_leaves_baselined_findings_alone(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(TRAIN)
    _run(tmp_path, monkeypatch, ".", "--write-baseline", "base.json")
    done = _run(tmp_path, monkeypatch, ".", "--baseline", "base.json", "--fix", "--unsafe-fixes")
    assert done.exit_code == 0, done.output
    assert (tmp_path / "train.py").read_text() == TRAIN
    fixed = _run(tmp_path, monkeypatch, ".", "--fix", "--unsafe-fixes")
    assert "benchmark = False" in (tmp_path / "train.py").read_text() and fixed.exit_code == 0
