"""tools/new_rule.py, end to end on a copy of the package tree (the real tree is never touched):
the next free code, the skeleton registered where rules are, a suite that fails until the author
writes the examples and passes once they are written, and bad input as exit 2."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from acclint.codes import CATEGORY_DIGITS
from acclint.rules import all_rules

REPO = Path(__file__).resolve().parents[1]
TOOL = REPO / "tools" / "new_rule.py"
EXAMPLES_TEST = REPO / "tests" / "rules" / "test_rule_examples.py"


@pytest.fixture
def tree(tmp_path) -> Path:
    shutil.copytree(REPO / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def new_rule(tree: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), "--root", str(tree), *args], capture_output=True, text=True)


def in_copy(tree: Path, code: str) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter that imports acclint from the copy."""
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tree)


def registered(tree: Path, code: str) -> dict:
    probe = in_copy(tree, f"""
import json, acclint
from acclint.rules import all_rules
from acclint.rule_examples import rule_problems
rule = {{r.code: r for r in all_rules()}}["{code}"]
print(json.dumps(dict(file=acclint.__file__, name=rule.name, category=rule.category, severity=rule.severity,
                      maturity=rule.maturity, module=type(rule).__module__, problems=rule_problems(rule))))
""")
    assert probe.returncode == 0, probe.stderr
    return json.loads(probe.stdout)


def expected_next(category: str, rules) -> str:
    used = sorted(int(r.code[4:]) for r in rules if r.code[3] == CATEGORY_DIGITS[category])
    number = next(n for n in range(1, 100) if n not in used)
    return f"ACL{CATEGORY_DIGITS[category]}{number:02d}"


def run_example_tests(tree: Path, code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    return subprocess.run([sys.executable, "-m", "pytest", str(EXAMPLES_TEST), "-q", "-p", "no:cacheprovider",
                           "-k", code], capture_output=True, text=True, env=env, cwd=tree)


def test_explicit_rule_joins_its_category_module_and_fails_until_written(tree):
    code = expected_next("seed", all_rules())
    done = new_rule(tree, "--category", "seed", "--name", "unseeded-dataloader", "--severity", "info")
    assert done.returncode == 0, done.stderr
    assert f"Added {code} unseeded-dataloader" in done.stdout and "tools/gen_docs.py" in done.stdout
    rule = registered(tree, code)
    assert Path(rule["file"]).is_relative_to(tree)
    assert (rule["name"], rule["category"], rule["severity"], rule["maturity"], rule["module"]) == \
        ("unseeded-dataloader", "seed", "info", "preview", "acclint.rules.seed")
    assert any("placeholder" in problem for problem in rule["problems"])
    # The suite fails on the placeholders...
    failing = run_example_tests(tree, code)
    assert failing.returncode == 1 and "placeholder tools/new_rule.py wrote" in failing.stdout
    # ... and passes once the author writes a summary, a page, both examples and the check.
    module = tree / "src" / "acclint" / "rules" / "seed.py"
    source = module.read_text()
    source = re.sub(r'# TODO\(new_rule\): code the rule must flag[^\n]*', f'print("step")  # expect: {code}', source)
    source = re.sub(r"# TODO\(new_rule\): the nearest code[^\n]*", "x = 1", source)
    source = source.replace("TODO(new_rule): ", "").replace(
        "        return iter(())",
        '        return (Written(c.node, "print") for c in facts.calls if c.callee == "print")')
    module.write_text(source)
    passing = run_example_tests(tree, code)
    assert passing.returncode == 0, passing.stdout[-3000:]
    assert "4 passed" in passing.stdout  # two examples, the page, the code scheme
    assert (REPO / "src" / "acclint" / "rules" / "seed.py").read_text().count(code) == \
        sum(r.code == code for r in all_rules())  # the real tree is untouched


def test_program_rule_in_a_category_without_a_module_gets_a_registered_module(tree):
    # Take the debug-tooling family out of the copy, so its category has no module and no rule.
    rules_dir = tree / "src" / "acclint" / "rules"
    (rules_dir / "debug_tooling.py").unlink()
    init = rules_dir / "__init__.py"
    init.write_text(re.sub(r",\s*debug_tooling\b|\bdebug_tooling,\s*", "", init.read_text()))
    done = new_rule(tree, "--category", "debug-tooling", "--name", "probe-left-on", "--kind", "program")
    assert done.returncode == 0, done.stderr
    assert "a new module, registered" in done.stdout
    rule = registered(tree, "ACL801")
    assert rule["module"] == "acclint.rules.debug_tooling" and rule["category"] == "debug-tooling"
    # A program rule's skeleton runs: a scan with it reports nothing and fails on nothing.
    scan = in_copy(tree, """
import pathlib, tempfile
from acclint.config import Config
from acclint.linter.engine import scan
from acclint.rules import all_rules
rule = [r for r in all_rules() if r.code == "ACL801"]
folder = pathlib.Path(tempfile.mkdtemp())
(folder / "train.py").write_text("import torch\\nopt = torch.optim.SGD([], lr=1)\\nopt.step()\\n")
result = scan([folder], rule, Config(), jobs=1, cwd=folder)
print(len(result.findings), len(result.errors))
""")
    assert scan.returncode == 0 and scan.stdout.split() == ["0", "0"], scan.stderr


@pytest.mark.parametrize("args,message", [
    (["--category", "style", "--name", "x"], "unknown category 'style'"),
    (["--category", "hyperparameter", "--name", "x"], "unknown category 'hyperparameter'"),
    (["--category", "seed", "--name", "unseeded-torch"], "the name 'unseeded-torch' is taken by ACL104"),
    (["--category", "seed", "--name", "Not_Kebab"], "is not kebab-case"),
    (["--category", "seed", "--name", "x", "--kind", "graph"], "invalid choice: 'graph'"),
    (["--category", "seed"], "the following arguments are required: --name"),
])
def test_bad_input_exits_2_without_a_traceback(tree, args, message):
    before = {p: p.read_bytes() for p in (tree / "src").rglob("*.py")}
    done = new_rule(tree, *args)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
    assert {p: p.read_bytes() for p in (tree / "src").rglob("*.py")} == before


def test_a_class_name_clash_is_refused(tree):
    assert new_rule(tree, "--category", "seed", "--name", "unseeded-dataloader").returncode == 0
    module = tree / "src" / "acclint" / "rules" / "seed.py"
    # The name is free again (renamed), the class name is not.
    module.write_text(module.read_text().replace('name = "unseeded-dataloader"', 'name = "renamed"'))
    again = new_rule(tree, "--category", "seed", "--name", "unseeded-dataloader")
    assert again.returncode == 2 and "already defines a class UnseededDataloader" in again.stderr
