"""End-to-end tests of the `acclint` command: exit codes, report formats, configuration, suppression.

Most tests drive the click command in-process (`CliRunner`) for speed; the ones marked
"end to end" start `python -m acclint` in a subprocess, as a user or CI would.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

REPO_ROOT = Path(__file__).resolve().parents[1]
SRC = REPO_ROOT / "src"

try:  # installed with `pip install -e .` in CI; straight from the checkout otherwise
    import acclint  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, str(SRC))

from acclint import __version__  # noqa: E402
from acclint.cli import main  # noqa: E402
from acclint.rules import all_rules  # noqa: E402

# ACL202 (cudnn.benchmark = True) on line 3, plus project-level seed/determinism findings.
TRAIN = """\
import torch
if __name__ == "__main__":
    torch.backends.cudnn.benchmark = True
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(2)).sum().backward()
    opt.step()
"""
BENCHMARK_LINE = 3
BENCHMARK_STMT = "torch.backends.cudnn.benchmark = True"
LIBRARY = "def f(): return 1\n"

FINDING_KEYS = ["rule", "category", "severity", "path", "line", "column", "end_line", "end_column", "message", "fix",
                "proven", "premises"]
TOP_KEYS = {"version", "files_scanned", "findings", "errors", "skipped"}
RULES = {rule.code: rule for rule in all_rules()}

TEXT_FINDING = re.compile(r"^(?P<path>\S+):(?P<line>\d+):(?P<col>\d+): (?P<rule>ACL\d{3}) (?P<severity>error|warning|info) \[(?P<cat>[a-z-]+)\] (?P<msg>.+)$")
GITHUB_LINE = re.compile(
    r"^::(?P<kind>error|warning|notice) file=(?P<file>[^,]+),line=(?P<line>\d+),col=(?P<col>\d+),"
    r"endLine=(?P<end_line>\d+),endColumn=(?P<end_col>\d+),title=(?P<rule>ACL\d{3}) \((?P<name>[a-z0-9-]+)\)::(?P<msg>.+)$"
)


# --------------------------------------------------------------------------------------------
# helpers


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# The probe of a per-file warning here is ACL202 (cudnn.benchmark = True). Which rules run by default is
# data, the judged corpus's measured precision (tests/test_maturity.py), so these tests of the command line's
# mechanics turn preview rules on rather than depend on it.
PREVIEW_ON = "[tool.acclint]\npreview = true\n"


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """An empty project folder, the current directory, with a pyproject.toml (so the upward config search
    stops here and never reads a stray file) that only turns preview rules on."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text(PREVIEW_ON, encoding="utf-8")
    monkeypatch.chdir(root)
    return root


def set_config(root: Path, body: str) -> None:
    (root / "pyproject.toml").write_text(PREVIEW_ON + body, encoding="utf-8")


def invoke(*args: str):
    result = CliRunner().invoke(main, [str(a) for a in args])
    # A bug must never surface as a Python exception (only SystemExit from the exit code).
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"acclint raised {result.exception!r}\n{result.output}") from result.exception
    return result


def scan_json(*args: str):
    result = invoke("scan", *args, "--format", "json")
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def rules_of(report: dict) -> set:
    return {f["rule"] for f in report["findings"]}


def subprocess_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH", "")]))
    env.pop("NO_COLOR", None)
    return env


def run_acclint(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "acclint", *[str(a) for a in args]],
        cwd=cwd, env=subprocess_env(), capture_output=True, text=True, timeout=timeout,
    )


def assert_no_traceback(*outputs: str) -> None:
    for output in outputs:
        assert "Traceback" not in output, output


# --------------------------------------------------------------------------------------------
# exit codes


def test_clean_library_file_exits_0(project):
    write(project, "lib.py", LIBRARY)
    result = invoke("scan", "lib.py")
    assert result.exit_code == 0, result.output
    code, report = scan_json("lib.py")
    assert code == 0
    assert report["findings"] == [] and report["errors"] == [] and report["files_scanned"] == 1


def test_violation_exits_1(project):
    write(project, "train.py", TRAIN)
    result = invoke("scan", "train.py", "--select", "ACL202")
    assert result.exit_code == 1, result.output
    assert "ACL202" in result.stdout


def test_fail_on_error_with_only_warnings_exits_0(project):
    write(project, "train.py", TRAIN)
    code, report = scan_json("train.py", "--select", "ACL202", "--fail-on", "error")
    assert code == 0
    # The finding is still reported; only the exit code changes.
    assert [(f["rule"], f["severity"]) for f in report["findings"]] == [("ACL202", "warning")]


def test_fail_on_info_and_never(project):
    write(project, "train.py", TRAIN)
    # ACL102 (PYTHONHASHSEED unset) is an info finding: not a failure by default...
    code, report = scan_json("train.py", "--select", "ACL102")
    assert {f["severity"] for f in report["findings"]} == {"info"}
    assert code == 0
    # ...but it is with --fail-on info.
    code, _ = scan_json("train.py", "--select", "ACL102", "--fail-on", "info")
    assert code == 1
    code, _ = scan_json("train.py", "--select", "ACL202", "--fail-on", "info")
    assert code == 1
    code, report = scan_json("train.py", "--fail-on", "never")
    assert code == 0 and report["findings"]


@pytest.mark.parametrize("option", ["--select", "--ignore"])
def test_unknown_rule_on_command_line_exits_2(project, option):
    write(project, "train.py", TRAIN)
    result = invoke("scan", "train.py", option, "NOPE")
    assert result.exit_code == 2
    assert "NOPE" in result.output
    assert_no_traceback(result.output)
    assert "ACL202" not in result.stdout  # nothing was scanned


def test_bad_select_end_to_end(project):
    write(project, "train.py", TRAIN)
    proc = run_acclint("scan", "train.py", "--select", "NOPE", cwd=project)
    assert proc.returncode == 2
    assert "NOPE" in proc.stderr
    assert_no_traceback(proc.stdout, proc.stderr)


BAD_CONFIGS = {
    "unknown-key": ('bogus = 1\n', "bogus"),
    "unknown-code": ('select = ["ACL999"]\n', "ACL999"),
    "unknown-category": ('ignore = ["sead"]\n', "sead"),
    "bad-severity": ('severity = { ACL202 = "fatal" }\n', "fatal"),
    "bad-severity-code": ('severity = { ACL998 = "error" }\n', "ACL998"),
    "bad-fail-on": ('fail-on = "sometimes"\n', "sometimes"),
    "select-not-a-list": ('select = 3\n', "select"),
    "per-file-unknown-code": ('[tool.acclint.per-file-ignores]\n"a.py" = ["ACL997"]\n', "ACL997"),
    "invalid-toml": ('select = ["ACL202"\n', "TOML"),
}


@pytest.mark.parametrize("name", sorted(BAD_CONFIGS))
def test_bad_config_exits_2_with_message(project, name):
    body, needle = BAD_CONFIGS[name]
    write(project, "train.py", TRAIN)
    set_config(project, body)
    result = invoke("scan", "train.py")
    assert result.exit_code == 2, result.output
    assert needle in result.output
    assert "pyproject.toml" in result.output  # says which file is wrong
    assert_no_traceback(result.output)


def test_bad_config_end_to_end(project):
    write(project, "train.py", TRAIN)
    set_config(project, 'select = ["ACL999"]\n')
    proc = run_acclint("scan", "train.py", cwd=project)
    assert proc.returncode == 2
    assert "ACL999" in proc.stderr
    assert_no_traceback(proc.stdout, proc.stderr)


def test_end_to_end_exit_codes(project):
    write(project, "lib.py", LIBRARY)
    write(project, "train.py", TRAIN)
    clean = run_acclint("scan", "lib.py", cwd=project)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    dirty = run_acclint("scan", "train.py", "--select", "ACL202", "--format", "json", cwd=project)
    assert dirty.returncode == 1, dirty.stderr
    report = json.loads(dirty.stdout)
    assert rules_of(report) == {"ACL202"}
    assert_no_traceback(clean.stderr, dirty.stderr)


# --------------------------------------------------------------------------------------------
# report formats


def test_json_shape(project):
    write(project, "train.py", TRAIN)
    write(project, "lib.py", LIBRARY)
    write(project, "broken.py", "def f(:\n")
    (project / "blob.py").write_bytes(b"\x00\x01binary")
    code, report = scan_json(".")
    assert code == 1
    assert set(report) == TOP_KEYS
    assert report["version"] == 1
    assert isinstance(report["files_scanned"], int) and report["files_scanned"] == 2
    assert isinstance(report["findings"], list) and report["findings"]
    for finding in report["findings"]:
        assert list(finding) == FINDING_KEYS
        for key in ("rule", "category", "severity", "path", "message"):
            assert isinstance(finding[key], str) and finding[key], key
        for key in ("line", "column", "end_line", "end_column"):
            assert type(finding[key]) is int and finding[key] >= 1, (key, finding)
        assert (finding["end_line"], finding["end_column"]) >= (finding["line"], finding["column"])
        assert finding["fix"] is None or isinstance(finding["fix"], str)
        assert finding["severity"] in ("error", "warning", "info")
        assert finding["rule"] in RULES
        assert finding["category"] == RULES[finding["rule"]].category
        assert finding["path"] == "train.py"
    assert [list(e) for e in report["errors"]] == [["path", "message", "code"]]
    assert report["errors"][0]["path"] == "broken.py" and report["errors"][0]["code"] == "E999"
    assert all(isinstance(v, str) for v in report["errors"][0].values())
    assert [list(s) for s in report["skipped"]] == [["path", "reason"]]
    assert report["skipped"][0]["path"] == "blob.py" and report["skipped"][0]["reason"]


def test_json_columns_are_one_based_and_end_exclusive(project):
    write(project, "train.py", TRAIN)
    _, report = scan_json("train.py", "--select", "ACL202")
    [finding] = report["findings"]
    line = TRAIN.splitlines()[BENCHMARK_LINE - 1]
    assert finding["line"] == finding["end_line"] == BENCHMARK_LINE
    # 1-based: the statement starts after 4 spaces, at column 5.
    assert finding["column"] == line.index(BENCHMARK_STMT) + 1 == 5
    assert line[finding["column"] - 1:finding["end_column"] - 1] == BENCHMARK_STMT


def test_sarif_shape(project):
    write(project, "train.py", TRAIN)
    _, report = scan_json("train.py")
    result = invoke("scan", "train.py", "--format", "sarif")
    assert result.exit_code == 1
    sarif = json.loads(result.stdout)
    assert sarif["version"] == "2.1.0"
    assert "sarif" in sarif.get("$schema", "")
    run = sarif["runs"][0]
    assert run["tool"]["driver"]["name"] == "acclint"
    rule_ids = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert {f["rule"] for f in report["findings"]} <= set(rule_ids)
    assert len(run["results"]) == len(report["findings"])
    levels = {"error": "error", "warning": "warning", "info": "note"}
    expected = sorted((f["rule"], levels[f["severity"]], f["line"], f["column"], f["end_line"], f["end_column"])
                      for f in report["findings"])
    seen = []
    for res in run["results"]:
        assert res["level"] in ("error", "warning", "note")
        assert res["message"]["text"]
        if "ruleIndex" in res:
            assert rule_ids[res["ruleIndex"]] == res["ruleId"]
        location = res["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"].endswith("train.py")
        region = location["region"]
        seen.append((res["ruleId"], res["level"], region["startLine"], region["startColumn"],
                     region["endLine"], region["endColumn"]))
    assert sorted(seen) == expected
    assert ("ACL202", "warning", 3, 5) in [s[:4] for s in seen]


def test_github_annotations(project):
    write(project, "train.py", TRAIN)
    _, report = scan_json("train.py")
    result = invoke("scan", "train.py", "--format", "github")
    assert result.exit_code == 1
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == len(report["findings"])
    kinds = {"error": "error", "warning": "warning", "info": "notice"}
    parsed = []
    for line in lines:
        match = GITHUB_LINE.match(line)
        assert match, line
        assert match["name"] == RULES[match["rule"]].name
        parsed.append((match["kind"], match["file"], int(match["line"]), int(match["col"]),
                       int(match["end_line"]), int(match["end_col"]), match["rule"]))
    expected = [(kinds[f["severity"]], f["path"], f["line"], f["column"], f["end_line"], f["end_column"], f["rule"])
                for f in report["findings"]]
    assert sorted(parsed) == sorted(expected)
    bench = [line for line in lines if "title=ACL202 (cudnn-benchmark)::" in line]
    assert len(bench) == 1 and bench[0].startswith("::warning file=train.py,line=3,col=5,endLine=3,")


def test_text_format_lines_and_summary(project):
    write(project, "train.py", TRAIN)
    _, report = scan_json("train.py")
    result = invoke("scan", "train.py", "--no-color")
    assert result.exit_code == 1
    lines = result.stdout.rstrip("\n").splitlines()
    findings = [TEXT_FINDING.match(line) for line in lines]
    findings = [m for m in findings if m]
    assert len(findings) == len(report["findings"])
    got = sorted((m["path"], int(m["line"]), int(m["col"]), m["rule"], m["severity"], m["cat"]) for m in findings)
    assert got == sorted((f["path"], f["line"], f["column"], f["rule"], f["severity"], f["category"])
                         for f in report["findings"])
    assert "train.py:3:5: ACL202 warning [determinism] " in result.stdout
    # the fix of each finding is on the following, indented line
    fix_lines = [line for line in lines if line.startswith("    fix: ")]
    assert len(fix_lines) == sum(1 for f in report["findings"] if f["fix"])
    summary = lines[-1]
    match = re.match(r"Found (\d+) findings? \((.*)\) in 1 file\.$", summary)
    assert match, summary
    assert int(match[1]) == len(report["findings"])
    warnings = sum(f["severity"] == "warning" for f in report["findings"])
    assert f"{warnings} warning" in match[2]
    assert "\x1b[" not in result.stdout

    hidden = invoke("scan", "train.py", "--hide-fix", "--no-color")
    assert "fix:" not in hidden.stdout
    assert hidden.stdout.count("ACL202") == 1


def test_color_to_a_file_when_forced(project):
    write(project, "train.py", TRAIN)
    invoke("scan", "train.py", "--select", "ACL202", "--color", "-o", "colored.txt")
    invoke("scan", "train.py", "--select", "ACL202", "-o", "plain.txt")
    assert "\x1b[" in (project / "colored.txt").read_text(encoding="utf-8")
    assert "\x1b[" not in (project / "plain.txt").read_text(encoding="utf-8")


def test_color_forced_on_a_pipe(project):
    write(project, "train.py", TRAIN)
    proc = run_acclint("scan", "train.py", "--select", "ACL202", "--color", cwd=project)
    assert proc.returncode == 1
    assert "\x1b[" in proc.stdout


def test_text_summary_for_clean_scan(project):
    write(project, "lib.py", LIBRARY)
    write(project, "lib2.py", LIBRARY)
    result = invoke("scan", ".", "--no-color")
    assert result.exit_code == 0
    lines = result.stdout.strip().splitlines()
    assert not any(TEXT_FINDING.match(line) for line in lines)
    assert "2 files" in lines[-1]


@pytest.mark.parametrize("fmt", ["json", "text", "sarif", "github"])
def test_output_file(project, fmt):
    write(project, "train.py", TRAIN)
    out = project / "reports" / "out.txt"
    out.parent.mkdir()
    result = invoke("scan", "train.py", "--select", "ACL202", "--format", fmt, "--output", out)
    assert result.exit_code == 1  # the exit code does not depend on where the report goes
    assert result.stdout.strip() == ""
    text = out.read_text(encoding="utf-8")
    assert "ACL202" in text
    to_stdout = invoke("scan", "train.py", "--select", "ACL202", "--format", fmt)
    if fmt in ("json", "sarif"):
        assert json.loads(text) == json.loads(to_stdout.stdout)
    else:
        assert text.strip() == to_stdout.stdout.strip()


def test_output_file_end_to_end(project):
    write(project, "train.py", TRAIN)
    proc = run_acclint("scan", "train.py", "--format", "json", "-o", "report.json", cwd=project)
    assert proc.returncode == 1
    assert proc.stdout.strip() == ""
    report = json.loads((project / "report.json").read_text(encoding="utf-8"))
    assert report["version"] == 1 and "ACL202" in rules_of(report)


# --------------------------------------------------------------------------------------------
# configuration


def baseline(project: Path) -> list:
    _, report = scan_json(".")
    assert report["findings"]
    return report["findings"]


def keyed(findings) -> list:
    return sorted((f["path"], f["rule"], f["line"], f["column"]) for f in findings)


SELECTIONS = {
    # name: (config body, predicate a kept finding satisfies)
    "select-code": ('select = ["ACL202"]\n', lambda f: f["rule"] == "ACL202"),
    "select-prefix": ('select = ["ACL2"]\n', lambda f: f["rule"].startswith("ACL2")),
    "select-category": ('select = ["seed"]\n', lambda f: f["category"] == "seed"),
    "ignore-code": ('ignore = ["ACL202"]\n', lambda f: f["rule"] != "ACL202"),
    "ignore-prefix": ('ignore = ["ACL10"]\n', lambda f: not f["rule"].startswith("ACL10")),
    "ignore-category": ('ignore = ["determinism"]\n', lambda f: f["category"] != "determinism"),
    "select-and-ignore": ('select = ["determinism"]\nignore = ["ACL202"]\n',
                          lambda f: f["category"] == "determinism" and f["rule"] != "ACL202"),
    "lowercase-code": ('select = ["acl202"]\n', lambda f: f["rule"] == "ACL202"),
}


@pytest.mark.parametrize("name", sorted(SELECTIONS))
def test_config_select_and_ignore(project, name):
    body, keep = SELECTIONS[name]
    write(project, "train.py", TRAIN)
    everything = baseline(project)
    expected = [f for f in everything if keep(f)]
    # the predicate must actually drop something and keep something, or the test proves nothing
    assert 0 < len(expected) < len(everything), name
    set_config(project, body)
    _, report = scan_json(".")
    assert keyed(report["findings"]) == keyed(expected)


@pytest.mark.parametrize("option, value, keep", [
    ("--select", "ACL202,ACL201", lambda f: f["rule"] in ("ACL202", "ACL201")),
    ("--select", "seed", lambda f: f["category"] == "seed"),
    ("--ignore", "ACL1", lambda f: not f["rule"].startswith("ACL1")),
    ("--ignore", "determinism", lambda f: f["category"] != "determinism"),
])
def test_command_line_select_and_ignore(project, option, value, keep):
    write(project, "train.py", TRAIN)
    everything = baseline(project)
    expected = [f for f in everything if keep(f)]
    assert 0 < len(expected) < len(everything)
    _, report = scan_json(".", option, value)
    assert keyed(report["findings"]) == keyed(expected)


def test_command_line_select_replaces_config_select(project):
    write(project, "train.py", TRAIN)
    set_config(project, 'select = ["ACL201"]\n')
    _, report = scan_json(".")
    assert rules_of(report) == {"ACL201"}
    _, report = scan_json(".", "--select", "ACL202")
    assert rules_of(report) == {"ACL202"}


def test_per_file_ignores(project):
    write(project, "train.py", TRAIN)
    write(project, "sub/train_b.py", TRAIN)
    write(project, "other/train_c.py", TRAIN)
    set_config(project, 'select = ["ACL202", "ACL201"]\n'
                        '[tool.acclint.per-file-ignores]\n'
                        '"sub/*.py" = ["ACL202"]\n'
                        '"train_c.py" = ["determinism"]\n')
    _, report = scan_json(".")
    by_path = {}
    for f in report["findings"]:
        by_path.setdefault(f["path"], set()).add(f["rule"])
    assert by_path == {"train.py": {"ACL201", "ACL202"}, "sub/train_b.py": {"ACL201"}}


def test_per_file_ignores_do_not_depend_on_the_current_directory(project, monkeypatch):
    write(project, "sub/train_b.py", TRAIN)
    set_config(project, 'select = ["ACL202"]\n[tool.acclint.per-file-ignores]\n"sub/*.py" = ["ACL202"]\n')
    _, report = scan_json(".")
    assert report["findings"] == []
    monkeypatch.chdir(project.parent)
    _, report = scan_json("proj")
    assert report["findings"] == []


def test_severity_override_changes_report_and_exit_code(project):
    write(project, "train.py", TRAIN)
    set_config(project, 'select = ["ACL202"]\nseverity = { ACL202 = "info" }\n')
    code, report = scan_json(".")
    assert [(f["rule"], f["severity"]) for f in report["findings"]] == [("ACL202", "info")]
    assert code == 0  # info is below the default fail-on (warning)
    code, _ = scan_json(".", "--fail-on", "info")
    assert code == 1
    text = invoke("scan", ".", "--format", "github")
    assert text.stdout.startswith("::notice ")

    set_config(project, 'select = ["ACL202", "ACL201"]\nseverity = { determinism = "error" }\nfail-on = "error"\n')
    code, report = scan_json(".")
    assert {f["severity"] for f in report["findings"]} == {"error"}
    assert code == 1

    # the code beats the category
    set_config(project, 'select = ["ACL202", "ACL201"]\n'
                        'severity = { determinism = "error", ACL202 = "info" }\nfail-on = "error"\n')
    code, report = scan_json(".")
    assert {(f["rule"], f["severity"]) for f in report["findings"]} == {("ACL201", "error"), ("ACL202", "info")}
    assert code == 1


def test_severity_override_by_prefix_applies_or_is_rejected(project):
    write(project, "train.py", TRAIN)
    set_config(project, 'select = ["ACL202"]\nseverity = { ACL2 = "error" }\n')
    result = invoke("scan", ".", "--format", "json")
    if result.exit_code == 2:
        assert "ACL2" in result.output
        return
    report = json.loads(result.stdout)
    assert [(f["rule"], f["severity"]) for f in report["findings"]] == [("ACL202", "error")]


def test_fail_on_in_config_and_command_line_override(project):
    write(project, "train.py", TRAIN)
    set_config(project, 'select = ["ACL202"]\nfail-on = "error"\n')
    code, report = scan_json(".")
    assert code == 0 and rules_of(report) == {"ACL202"}
    code, _ = scan_json(".", "--fail-on", "warning")
    assert code == 1
    set_config(project, 'select = ["ACL102"]\nfail-on = "info"\n')
    code, report = scan_json(".")
    assert code == 1 and {f["severity"] for f in report["findings"]} == {"info"}
    set_config(project, 'fail-on = "never"\n')
    code, report = scan_json(".")
    assert code == 0 and report["findings"]


def test_exclude_globs(project):
    write(project, "train.py", TRAIN)
    write(project, "legacy/old_train.py", TRAIN)
    write(project, "deep/er/gen_train.py", TRAIN)
    write(project, "scratch_train.py", TRAIN)
    write(project, "keep/train_k.py", TRAIN)
    _, report = scan_json(".", "--select", "ACL202")
    assert report["files_scanned"] == 5

    set_config(project, 'select = ["ACL202"]\nexclude = ["legacy", "**/gen_*.py", "scratch_*.py"]\n')
    _, report = scan_json(".")
    assert report["files_scanned"] == 2
    assert {f["path"] for f in report["findings"]} == {"train.py", "keep/train_k.py"}

    # --exclude adds to the config's list
    _, report = scan_json(".", "--exclude", "keep/*")
    assert report["files_scanned"] == 1
    assert {f["path"] for f in report["findings"]} == {"train.py"}


def test_config_found_from_a_subfolder_path(project, monkeypatch):
    """The nearest pyproject.toml is searched upward from the first scanned path, not the cwd."""
    write(project, "src/pkg/train.py", TRAIN)
    set_config(project, 'select = ["ACL202"]\n')
    monkeypatch.chdir(project.parent)
    _, report = scan_json("proj/src/pkg")
    assert rules_of(report) == {"ACL202"}


def test_config_option_points_at_another_file(project, tmp_path):
    write(project, "train.py", TRAIN)
    set_config(project, 'select = ["ACL201"]\n')  # the nearest one: must be ignored with --config
    other = tmp_path / "elsewhere" / "pyproject.toml"
    other.parent.mkdir()
    other.write_text('[tool.acclint]\nselect = ["ACL202"]\nfail-on = "error"\n', encoding="utf-8")
    code, report = scan_json(".", "--config", other)
    assert rules_of(report) == {"ACL202"}
    assert code == 0  # fail-on from the other file

    # A dedicated acclint.toml keeps its keys at the top level.
    dedicated = tmp_path / "elsewhere" / "acclint.toml"
    dedicated.write_text('select = ["ACL102"]\n', encoding="utf-8")
    _, report = scan_json(".", "--config", dedicated)
    assert rules_of(report) == {"ACL102"}

    missing = invoke("scan", ".", "--config", tmp_path / "nope.toml")
    assert missing.exit_code == 2
    assert "nope.toml" in missing.output
    assert_no_traceback(missing.output)

    bad = tmp_path / "elsewhere" / "bad.toml"
    bad.write_text('[tool.acclint]\nignore = ["ACL99"]\n', encoding="utf-8")
    result = invoke("scan", ".", "--config", bad)
    assert result.exit_code == 2 and "ACL99" in result.output and "bad.toml" in result.output


# --------------------------------------------------------------------------------------------
# suppression


def train_with_marker(marker: str) -> str:
    return TRAIN.replace(BENCHMARK_STMT, f"{BENCHMARK_STMT}  {marker}")


@pytest.mark.parametrize("marker, suppressed", [
    ("# noqa: ACL202", True),
    ("# noqa:ACL202", True),
    ("# noqa: ACL201, ACL202", True),
    ("# noqa: acl202", True),
    ("# acclint: ignore[ACL202]", True),
    ("# acclint: ignore[ACL201,ACL202]", True),
    ("# noqa", True),
    ("# acclint: ignore", True),
    ("# noqa: ACL201", False),
    ("# noqa: ACL2021", False),
    ("# acclint: ignore[ACL201]", False),
    ("# a comment about ACL202", False),
    pytest.param("# NOQA: ACL202", True),
    pytest.param("# NOQA", True),
])
def test_inline_suppression(project, marker, suppressed):
    write(project, "train.py", train_with_marker(marker))
    code, report = scan_json("train.py", "--select", "ACL202")
    if suppressed:
        assert report["findings"] == [] and code == 0
    else:
        assert [(f["rule"], f["line"]) for f in report["findings"]] == [("ACL202", BENCHMARK_LINE)]
        assert code == 1


def test_suppression_on_last_line_of_a_multiline_finding(project):
    source = TRAIN.replace(BENCHMARK_STMT, "torch.backends.cudnn.benchmark = (\n        True\n    )")
    write(project, "train.py", source)
    _, report = scan_json("train.py", "--select", "ACL202")
    [finding] = report["findings"]
    assert finding["end_line"] > finding["line"]
    lines = source.splitlines()
    lines[finding["end_line"] - 1] += "  # noqa: ACL202"
    write(project, "train.py", "\n".join(lines) + "\n")
    _, report = scan_json("train.py", "--select", "ACL202")
    assert report["findings"] == []
    # A marker on a line in the middle does not count.
    lines = source.splitlines()
    lines[finding["line"]] += "  # noqa: ACL202"
    write(project, "train.py", "\n".join(lines) + "\n")
    _, report = scan_json("train.py", "--select", "ACL202")
    assert rules_of(report) == {"ACL202"}


def test_bare_noqa_suppresses_every_rule_on_its_line_only(project):
    write(project, "train.py", TRAIN)
    _, before = scan_json("train.py")
    on_line_2 = {f["rule"] for f in before["findings"] if f["line"] == 2}
    assert len(on_line_2) >= 2  # several project-level findings sit on the __main__ guard
    write(project, "train.py", TRAIN.replace('if __name__ == "__main__":', 'if __name__ == "__main__":  # noqa'))
    _, after = scan_json("train.py")
    assert [f for f in after["findings"] if f["line"] == 2] == []
    assert keyed(after["findings"]) == keyed([f for f in before["findings"] if f["line"] != 2])
    assert "ACL202" in rules_of(after)


# --------------------------------------------------------------------------------------------
# rules, rule, --version


def test_rules_lists_every_rule(project):
    result = invoke("rules")
    assert result.exit_code == 0
    codes = set(re.findall(r"^(ACL\d{3})\s", result.stdout, flags=re.M))
    assert codes == set(RULES)
    assert {f"ACL10{i}" for i in range(1, 9)} | {f"ACL20{i}" for i in range(1, 10)} <= codes
    for rule in RULES.values():
        assert rule.name in result.stdout
    as_json = json.loads(invoke("rules", "--format", "json").stdout)
    assert {entry["code"] for entry in as_json} == set(RULES)
    assert next(e for e in as_json if e["code"] == "ACL202")["name"] == "cudnn-benchmark"


@pytest.mark.parametrize("name", ["ACL202", "acl202", "cudnn-benchmark"])
def test_rule_page(project, name):
    result = invoke("rule", name)
    assert result.exit_code == 0, result.output
    assert "ACL202" in result.stdout and "cudnn-benchmark" in result.stdout
    assert "benchmark" in result.stdout.split("\n", 3)[-1]  # a body, not only a title
    assert result.stdout == invoke("rule", "ACL202").stdout


@pytest.mark.parametrize("name", ["ACL999", "NOPE", "cudnn"])
def test_unknown_rule_page_exits_2(project, name):
    result = invoke("rule", name)
    assert result.exit_code == 2
    assert name in result.output
    assert_no_traceback(result.output)


def test_rule_end_to_end(project):
    proc = run_acclint("rule", "cudnn-benchmark", cwd=project)
    assert proc.returncode == 0 and "ACL202" in proc.stdout
    proc = run_acclint("rule", "ACL999", cwd=project)
    assert proc.returncode == 2 and "ACL999" in proc.stderr
    assert_no_traceback(proc.stderr)


def test_version_end_to_end(project):
    proc = run_acclint("--version", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert __version__ in proc.stdout
    assert re.search(r"\d+\.\d+\.\d+", proc.stdout)


# --------------------------------------------------------------------------------------------
# parallel scan


def test_parallel_scan_matches_serial(project):
    """--jobs 2 on enough files to use the process pool gives exactly the --jobs 1 report."""
    for i in range(12):
        write(project, f"pkg/train_{i:02d}.py", TRAIN if i % 3 else TRAIN.replace("True", "False"))
    for i in range(8):
        write(project, f"pkg/helpers/util_{i}.py", LIBRARY)
    write(project, "pkg/seeded.py", "import random\nimport numpy as np\nif __name__ == '__main__':\n"
                                    "    random.seed(0)\n    np.random.seed(0)\n    print(np.random.rand())\n")
    write(project, "pkg/broken.py", "def f(:\n")
    write(project, "pkg/run.sh", "#!/bin/bash\nexport PYTHONHASHSEED=0\npython pkg/train_01.py\n")
    serial = run_acclint("scan", "pkg", "--format", "json", "--jobs", "1", cwd=project)
    parallel = run_acclint("scan", "pkg", "--format", "json", "--jobs", "2", cwd=project)
    assert serial.returncode == parallel.returncode == 1, serial.stderr + parallel.stderr
    serial_report, parallel_report = json.loads(serial.stdout), json.loads(parallel.stdout)
    assert serial_report["files_scanned"] == 22  # 20 modules, seeded.py, run.sh; broken.py is an error
    assert len(serial_report["errors"]) == 1
    assert "ACL202" in rules_of(serial_report)
    assert parallel_report == serial_report
    assert_no_traceback(serial.stderr, parallel.stderr)


_WITHOUT_NUMPY = '''
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise ImportError("blocked", name="numpy")
sys.meta_path.insert(0, Block())
sys.argv = ["acclint"] + sys.argv[1:]
from acclint.cli import main
main()
'''


def test_the_scanner_works_without_numpy_and_compare_says_what_is_missing(tmp_path):
    """numpy is a dependency of the runtime half only (caught by the real pre-commit hook's venv)."""
    import subprocess
    import sys

    (tmp_path / "train.py").write_text(
        "import torch\nif __name__ == '__main__':\n    torch.backends.cudnn.benchmark = True\n"
        "    model = torch.nn.Linear(2, 1)\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    model(torch.ones(2)).sum().backward()\n    opt.step()\n")
    scan = subprocess.run([sys.executable, "-c", _WITHOUT_NUMPY, "scan", str(tmp_path), "--select", "ACL202"],
                          capture_output=True, text=True)
    assert scan.returncode == 1 and "ACL202" in scan.stdout, scan.stderr
    helped = subprocess.run([sys.executable, "-c", _WITHOUT_NUMPY, "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "compare" in helped.stdout
    compare = subprocess.run([sys.executable, "-c", _WITHOUT_NUMPY, "compare", "a.json", "b.json"],
                             capture_output=True, text=True)
    assert compare.returncode == 2 and "numpy is missing" in compare.stderr
    assert "Traceback" not in compare.stderr
