"""Project-local rules: `[tool.acclint] plugins` loads the project's own Rule subclasses, which then
behave as built-ins do (selection, listing, reports, cache, worker processes, bad input)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from acclint.cli import main

SRC = Path(__file__).resolve().parents[1] / "src"

# A real explicit rule: every call to `print` in a scanned file, in the debug-tooling category.
PLUGIN = '''
from acclint.linter.rulebase import Example, RuleDoc
from acclint.rules.base import ExplicitRule, Written


class PrintInTraining(ExplicitRule):
    code = "ACL899"
    name = "print-in-training"
    category = "debug-tooling"
    severity = "warning"
    summary = "`print()` in training code"
    doc = RuleDoc(what="Reports calls to print().", why="Ranks interleave their output.", fix="Use logging.")
    invalid = (Example.script("""
        print("loss")  # expect: ACL899
    """),)
    valid = (Example.script("""
        import logging
        logging.info("loss")
    """),)

    def written(self, facts):
        for call in facts.calls:
            if call.callee == "print":
                yield Written(call.node, MESSAGE)


MESSAGE = "print() call"
'''

# A training program (an optimizer step), so the plugin's finding is proven and a warning by default.
TRAIN = ('import torch\nprint("loss")\nmodel = torch.nn.Linear(2, 1)\n'
         'optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n'
         'model(torch.ones(2)).sum().backward()\noptimizer.step()\n')


def project(tmp_path: Path, plugin: str = PLUGIN, plugins: str = '["my_rules"]', extra: str = "") -> Path:
    (tmp_path / "pyproject.toml").write_text(f"[tool.acclint]\nplugins = {plugins}\n{extra}", "utf-8")
    (tmp_path / "my_rules.py").write_text(plugin, "utf-8")
    (tmp_path / "train.py").write_text(TRAIN, "utf-8")
    return tmp_path


@pytest.fixture
def in_project(tmp_path, monkeypatch):
    monkeypatch.chdir(project(tmp_path))
    return tmp_path


def scan_json(*args: str) -> tuple:
    result = CliRunner().invoke(main, ["scan", "train.py", "--format", "json", "--no-cache", *args])
    return result.exit_code, json.loads(result.output) if result.output.strip() else None


def plugin_lines(report: dict) -> list:
    return [(f["path"], f["line"], f["rule"], f["category"]) for f in report["findings"] if f["rule"] == "ACL899"]


def test_plugin_rule_reports_like_a_builtin(in_project):
    code, report = scan_json()
    assert code == 1
    assert plugin_lines(report) == [("train.py", 2, "ACL899", "debug-tooling")]
    text = CliRunner().invoke(main, ["scan", "train.py", "--no-cache"])
    assert "train.py:2:1: ACL899 warning [debug-tooling] print() call" in text.output


def test_plugin_rule_selected_and_ignored_by_code(in_project):
    code, report = scan_json("--select", "ACL899")
    assert code == 1 and {f["rule"] for f in report["findings"]} == {"ACL899"}
    code, report = scan_json("--ignore", "ACL899")
    assert plugin_lines(report) == []
    (in_project / "pyproject.toml").write_text('[tool.acclint]\nplugins = ["my_rules"]\nignore = ["ACL899"]\n')
    assert plugin_lines(scan_json()[1]) == []
    (in_project / "pyproject.toml").write_text(
        '[tool.acclint]\nplugins = ["my_rules"]\n[tool.acclint.per-file-ignores]\n"train.py" = ["ACL899"]\n')
    assert plugin_lines(scan_json()[1]) == []


def test_plugin_rule_listed_and_explained(in_project):
    listing = CliRunner().invoke(main, ["rules", "--format", "json"])
    assert listing.exit_code == 0
    assert "ACL899" in {row["code"] for row in json.loads(listing.output)}
    page = CliRunner().invoke(main, ["rule", "print-in-training"])
    assert page.exit_code == 0 and "Ranks interleave their output." in page.output


def test_without_plugins_the_code_is_unknown(tmp_path, monkeypatch):
    monkeypatch.chdir(project(tmp_path, plugins="[]"))
    result = CliRunner().invoke(main, ["scan", "train.py", "--select", "ACL899"])
    assert result.exit_code == 2 and "unknown rule or category 'ACL899'" in result.output


def test_plugin_named_by_path_and_package_with_relative_import(tmp_path, monkeypatch):
    package = tmp_path / "lint" / "acc"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(PLUGIN.replace('MESSAGE = "print() call"', "from .words import MESSAGE"))
    (package / "words.py").write_text('MESSAGE = "print() from a package plugin"\n')
    project(tmp_path, plugins='["lint/acc"]')
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["scan", "train.py", "--no-cache"])
    assert "ACL899 warning [debug-tooling] print() from a package plugin" in result.output
    (tmp_path / "pyproject.toml").write_text('[tool.acclint]\nplugins = ["lint.acc"]\n')
    assert "print() from a package plugin" in CliRunner().invoke(main, ["scan", "train.py", "--no-cache"]).output


def test_explicit_config_file_loads_plugins_beside_it(tmp_path, monkeypatch):
    config_dir = tmp_path / "ci"
    config_dir.mkdir()
    (config_dir / "acclint.toml").write_text('plugins = ["my_rules"]\n')
    (config_dir / "my_rules.py").write_text(PLUGIN)
    (tmp_path / "train.py").write_text(TRAIN)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["scan", "train.py", "--no-cache", "--config", "ci/acclint.toml"])
    assert "ACL899" in result.output
    assert "ACL899" in CliRunner().invoke(main, ["rules", "--config", "ci/acclint.toml"]).output


def test_editing_a_plugin_invalidates_the_cache(in_project):
    first = CliRunner().invoke(main, ["scan", "train.py"])
    assert "print() call" in first.output and (in_project / ".acclint_cache").is_dir()
    # Same size, same file, new text: only the plugin's source changed, never the scanned file.
    plugin = in_project / "my_rules.py"
    plugin.write_text(PLUGIN.replace('"print() call"', '"PRINT() CALL"'))
    second = CliRunner().invoke(main, ["scan", "train.py"])
    assert "PRINT() CALL" in second.output and "print() call" not in second.output


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_plugin_runs_in_worker_processes(tmp_path, start_method):
    """Enough files for the worker pool (workers.PARALLEL_THRESHOLD), in a fresh interpreter; under
    spawn (and forkserver, Python 3.14's default) a worker imports the plugin itself."""
    project(tmp_path)
    for number in range(24):
        (tmp_path / f"module_{number}.py").write_text(f'print({number})\n')
    command = ("import multiprocessing, sys; multiprocessing.set_start_method(sys.argv[1]); "
               "from acclint.cli import main; main(sys.argv[2:])")
    completed = subprocess.run(
        [sys.executable, "-c", command, start_method, "scan", ".", "--jobs", "2", "--no-cache", "--select", "ACL899",
         "--format", "json"],
        cwd=tmp_path, capture_output=True, text=True, env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"})
    assert completed.returncode == 1, completed.stderr
    paths = {f["path"] for f in json.loads(completed.stdout)["findings"] if f["rule"] == "ACL899"}
    assert paths == {"train.py", *(f"module_{n}.py" for n in range(24))}


def test_test_rules_checks_the_plugin_examples(in_project):
    passing = CliRunner().invoke(main, ["test-rules"])
    assert passing.exit_code == 0 and "ACL899 print-in-training: 2 example(s) pass" in passing.output
    (in_project / "my_rules.py").write_text(PLUGIN.replace('print("loss")  # expect: ACL899', 'print("loss")'))
    failing = CliRunner().invoke(main, ["test-rules"])
    assert failing.exit_code == 1
    assert "must mark where its finding lands" in failing.output


BROKEN = {
    "import error": (PLUGIN + "\n1 / 0\n", "failed to import: ZeroDivisionError: division by zero"),
    "syntax error": (PLUGIN + "\ndef (\n", "failed to import: SyntaxError"),
    "builtin code": (PLUGIN.replace("ACL899", "ACL801"), "code ACL801 is already used by a built-in rule"),
    "builtin name": (PLUGIN.replace('name = "print-in-training"', 'name = "unseeded-torch"'),
                     "name 'unseeded-torch' is already used by ACL104"),
    "code of another category": (PLUGIN.replace("ACL899", "ACL199"),
                                 "code ACL199 does not match category 'debug-tooling': its codes are ACL8xx"),
    "malformed code": (PLUGIN.replace("ACL899", "MY-1"), "code 'MY-1' is not ACL followed by three digits"),
    "unknown category": (PLUGIN.replace('"debug-tooling"', '"style"'), "unknown category 'style'"),
    "no rule": ("X = 1\n", "defines no rule"),
    "missing doc": (PLUGIN.replace("    doc = RuleDoc(", "    _doc = RuleDoc("), "lacks doc"),
}


@pytest.mark.parametrize("plugin,message", BROKEN.values(), ids=BROKEN.keys())
def test_broken_plugin_is_a_usage_error(tmp_path, monkeypatch, plugin, message):
    monkeypatch.chdir(project(tmp_path, plugin=plugin))
    for command in (["scan", "train.py", "--no-cache"], ["rules"]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2, result.output
        assert message in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("plugins,message", [
    ('["missing_module"]', "cannot find 'missing_module'"),
    ('"my_rules"', None),
    ("[1]", "plugins must be a list of strings"),
    ('["not a name"]', "'not a name' is not a module name"),
    ('["my_rules", "again"]', "cannot find 'again'"),
])
def test_bad_plugins_setting_is_a_usage_error(tmp_path, monkeypatch, plugins, message):
    monkeypatch.chdir(project(tmp_path, plugins=plugins))
    result = CliRunner().invoke(main, ["scan", "train.py", "--no-cache"])
    if message is None:  # a single string is accepted as a one-item list, as exclude is
        assert result.exit_code == 1 and "ACL899" in result.output
        return
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_two_plugins_with_one_code_clash(tmp_path, monkeypatch):
    project(tmp_path, plugins='["my_rules", "other_rules"]')
    (tmp_path / "other_rules.py").write_text(PLUGIN.replace("print-in-training", "print-again"))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["scan", "train.py", "--no-cache"])
    assert result.exit_code == 2 and "code ACL899 is already used by plugin my_rules" in result.output


def test_show_settings_names_the_plugins(in_project):
    result = CliRunner().invoke(main, ["scan", "--show-settings"])
    assert result.exit_code == 0
    assert 'plugins = ["my_rules"]' in result.output and '"ACL899"' in result.output


def test_the_documented_example_plugin_works(tmp_path, monkeypatch):
    """The plugin docs/plugins.md shows, copied from it, is a working plugin."""
    readme = (Path(__file__).resolve().parents[1] / "docs" / "plugins.md").read_text("utf-8")
    block = next(b for b in readme.split("```python\n")[1:] if b.startswith("# my_rules.py")).split("```")[0]
    monkeypatch.chdir(project(tmp_path, plugin=block))
    result = CliRunner().invoke(main, ["scan", "train.py", "--no-cache", "--select", "ACL899"])
    assert result.exit_code == 1 and "train.py:2:1: ACL899 warning [debug-tooling] print() call" in result.output
    assert CliRunner().invoke(main, ["test-rules"]).exit_code == 0
