"""ruff's conventions, which users' fingers know: `check`, `--output-format`, `--statistics`,
`--extend-select`/`--extend-exclude`, `--show-settings`, stdin (`-`, `--stdin-filename`),
NO_COLOR/FORCE_COLOR, .gitignore, and `--no-fix` meaning "apply no fixes"."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from acclint.cli import main
from acclint.linter.maturity import is_preview
from acclint.rules import all_rules

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
RULE_NAMES = {rule.code: rule.name for rule in all_rules()}

# ACL202 on line 3, ACL102 (safe fix) and the unseeded-generator findings on the __main__ guard.
TRAIN = """\
import torch
if __name__ == "__main__":
    torch.backends.cudnn.benchmark = True
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(2)).sum().backward()
    opt.step()
"""
# The same program, seeded through a local helper that seeds Python's `random` only: where the
# helper is found, numpy and torch are reported unseeded; an unknown helper gets the benefit of the doubt.
SEEDED_TRAIN = """\
import torch
from utils.seeding import seed_all
if __name__ == "__main__":
    seed_all(0)
    torch.backends.cudnn.benchmark = True
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(2)).sum().backward()
    opt.step()
"""
SEEDING = """\
import random


def seed_all(seed):
    random.seed(seed)
"""
UNSEEDED = {"ACL101", "ACL103", "ACL104"}
LEFT_UNSEEDED = {"ACL103", "ACL104"}  # what seed_all leaves


# The probe is ACL202 (cudnn.benchmark = True); whether it runs by default is measured data
# (tests/test_maturity.py), so the project turns preview rules on.
PREVIEW_ON = "[tool.acclint]\npreview = true\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text(PREVIEW_ON, encoding="utf-8")
    monkeypatch.chdir(root)
    return root


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def set_config(root: Path, body: str) -> None:
    (root / "pyproject.toml").write_text(PREVIEW_ON + body, encoding="utf-8")


def invoke(*args, input=None, env=None):
    result = CliRunner().invoke(main, [str(a) for a in args], input=input, env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(result.output) from result.exception
    return result


def scan_json(*args, input=None):
    # --preview: these tests are about options and layering, and use every rule (ACL104 is preview).
    result = invoke("scan", *args, "--format", "json", "--preview", input=input)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def rules_of(report) -> set:
    return {f["rule"] for f in report["findings"]}


def run_acclint(*args, cwd, env_extra=None, input=None):
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH", "")]))
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "acclint", *map(str, args)], cwd=cwd, env=env, input=input,
                          capture_output=True, text=True, timeout=120)


# --------------------------------------------------------------------------------------------
# check, --output-format


def test_check_is_scan(project):
    write(project, "train.py", TRAIN)
    scanned, checked = invoke("scan", "train.py", "--no-color"), invoke("check", "train.py", "--no-color")
    assert checked.exit_code == scanned.exit_code == 1
    assert checked.stdout == scanned.stdout and "ACL202" in checked.stdout
    assert "check" in invoke("--help").stdout


@pytest.mark.parametrize("command", ["scan", "check"])
def test_output_format_is_format(project, command):
    write(project, "train.py", TRAIN)
    via_alias = invoke(command, "train.py", "--output-format", "json")
    assert json.loads(via_alias.stdout) == json.loads(invoke("scan", "train.py", "--format", "json").stdout)
    assert invoke(command, "train.py", "--output-format", "nope").exit_code == 2


def test_diff_accepts_output_format(project):
    write(project, "a.sh", "export HCCL_DETERMINISTIC=true\ntorchrun train.py --lr 0.1\n")
    write(project, "b.sh", "torchrun train.py --lr 0.2\n")
    result = invoke("diff", "a.sh", "b.sh", "--output-format", "json")
    assert result.exit_code == 1 and json.loads(result.stdout)["mismatches"]


# --------------------------------------------------------------------------------------------
# --statistics


def test_statistics_count_the_findings_per_rule(project):
    write(project, "train.py", TRAIN)
    write(project, "sub/train.py", TRAIN)
    write(project, "sub/run.sh", LAUNCH)  # ACL102's export before this launch line is a safe fix
    write(project, "broken.py", "def f(:\n")
    report = scan_json(".")
    expected = {}
    for finding in report["findings"]:
        expected[finding["rule"]] = expected.get(finding["rule"], 0) + 1
    expected["E999"] = 1

    as_json = invoke("scan", ".", "--statistics", "--output-format", "json", "--preview")
    assert as_json.exit_code == 1  # exits as the scan does
    rows = json.loads(as_json.stdout)
    assert {row["code"]: row["count"] for row in rows} == expected
    assert [row["count"] for row in rows] == sorted((row["count"] for row in rows), reverse=True)
    by_code = {row["code"]: row for row in rows}
    assert by_code["ACL202"]["name"] == "cudnn-benchmark" and by_code["E999"]["name"] == "syntax-error"
    assert by_code["ACL102"]["fixable"] is True and by_code["ACL202"]["fixable"] is False  # unsafe only

    text = invoke("scan", ".", "--statistics", "--preview")
    assert text.exit_code == 1
    lines = text.stdout.splitlines()
    assert len(lines) == len(expected)
    parsed = {}
    for line in lines:
        count, code, rest = line.split("\t")
        parsed[code.strip()] = (int(count), rest)
    assert {code: count for code, (count, _) in parsed.items()} == expected
    assert parsed["ACL102"][1] == "[*] pythonhashseed-unset"
    assert parsed["ACL202"][1] == "[ ] cudnn-benchmark"
    assert "ACL202 warning [determinism]" not in text.stdout  # the counts replace the findings


def test_statistics_of_a_clean_scan_and_unsupported_formats(project):
    write(project, "lib.py", "def f():\n    return 1\n")
    clean = invoke("scan", "lib.py", "--statistics")
    assert clean.exit_code == 0 and clean.stdout == ""
    assert json.loads(invoke("scan", "lib.py", "--statistics", "--format", "json").stdout) == []
    sarif = invoke("scan", "lib.py", "--statistics", "--format", "sarif")
    assert sarif.exit_code == 2 and "--statistics" in sarif.output


# --------------------------------------------------------------------------------------------
# --extend-select, --extend-exclude


def test_extend_select_adds_to_select(project):
    write(project, "train.py", TRAIN)
    assert rules_of(scan_json(".", "--select", "ACL202")) == {"ACL202"}
    assert rules_of(scan_json(".", "--select", "ACL202", "--extend-select", "ACL201")) == {"ACL201", "ACL202"}
    # With no select, everything already runs: extend-select must not narrow it.
    assert rules_of(scan_json(".", "--extend-select", "ACL201")) == rules_of(scan_json("."))
    # ignore wins over extend-select.
    assert rules_of(scan_json(".", "--select", "ACL202", "--extend-select", "ACL201", "--ignore", "ACL201")) \
        == {"ACL202"}
    assert invoke("scan", ".", "--extend-select", "NOPE").exit_code == 2


def test_extend_select_in_config_and_a_command_line_select(project):
    write(project, "train.py", TRAIN)
    set_config(project, 'select = ["ACL202"]\nextend-select = ["seed"]\n')
    report = scan_json(".")
    assert "ACL202" in rules_of(report) and UNSEEDED <= rules_of(report)
    assert {f["category"] for f in report["findings"]} == {"seed", "determinism"}
    # --select on the command line replaces the config's select and extend-select (ruff's layering)...
    assert rules_of(scan_json(".", "--select", "ACL201")) == {"ACL201"}
    # ...and --extend-select adds to the config's.
    assert rules_of(scan_json(".", "--extend-select", "ACL201")) == rules_of(report) | {"ACL201"}


def test_extend_exclude_on_the_command_line_and_in_config(project):
    write(project, "train.py", TRAIN)
    write(project, "legacy/old.py", TRAIN)
    write(project, "gen/g.py", TRAIN)
    assert scan_json(".", "--select", "ACL202")["files_scanned"] == 3
    assert scan_json(".", "--select", "ACL202", "--extend-exclude", "legacy")["files_scanned"] == 2
    set_config(project, 'select = ["ACL202"]\nexclude = ["gen"]\nextend-exclude = ["legacy"]\n')
    report = scan_json(".")
    assert report["files_scanned"] == 1 and {f["path"] for f in report["findings"]} == {"train.py"}
    set_config(project, 'extend-exclude = 3\n')
    bad = invoke("scan", ".")
    assert bad.exit_code == 2 and "extend-exclude" in bad.output


# --------------------------------------------------------------------------------------------
# --show-settings


def test_show_settings_prints_the_resolved_configuration_as_toml(project):
    (project / "pyproject.toml").write_text(  # preview left at its default (off) here
        '[tool.acclint]\nselect = ["seed"]\nignore = ["ACL102"]\nexclude = ["gen"]\nextend-exclude = ["old"]\n'
        'fail-on = "error"\n[tool.acclint.per-file-ignores]\n"tools/*" = ["ACL101"]\n', encoding="utf-8")
    result = invoke("scan", "missing_dir", "--show-settings", "--extend-select", "ACL202", "--exit-zero",
                    "--output-format", "json", "--no-respect-gitignore")
    assert result.exit_code == 0, result.output  # nothing is scanned: the missing path is no error here
    settings = tomllib.loads(result.stdout)
    assert settings["config-file"] == str(project / "pyproject.toml")
    assert settings["select"] == ["seed"] and settings["extend-select"] == ["ACL202"]
    assert settings["ignore"] == ["ACL102"] and settings["exclude"] == ["gen", "old"]
    assert settings["per-file-ignores"] == {"tools/*": ["ACL101"]}
    assert settings["fail-on"] == "error" and settings["exit-zero"] is True
    assert settings["output-format"] == "json" and settings["respect-gitignore"] is False
    assert settings["paths"] == ["missing_dir"]
    # Preview rules stay off: a category selects only the stable ones (ruff's preview).
    seed_rules = {r.code for r in all_rules() if r.category == "seed" and not is_preview(r)}
    assert set(settings["active-rules"]) == (seed_rules - {"ACL102"}) | {"ACL202"}
    assert settings["preview"] is False


# --------------------------------------------------------------------------------------------
# stdin


def test_stdin_is_scanned_as_the_named_file_with_its_folders_context(project):
    write(project, "pkg/utils/seeding.py", SEEDING)
    write(project, "pkg/utils/__init__.py", "")
    on_disk = write(project, "pkg/train.py", TRAIN)  # the saved file; the editor's buffer differs
    stale = scan_json("pkg/train.py")
    assert UNSEEDED <= rules_of(stale)

    from_stdin = scan_json("-", "--stdin-filename", "pkg/train.py", input=SEEDED_TRAIN)
    assert [f["path"] for f in from_stdin["findings"]] and {f["path"] for f in from_stdin["findings"]} == \
        {"pkg/train.py"}
    # seed_all was found beside NAME, in pkg/utils: it seeds `random` and nothing else.
    assert "ACL101" not in rules_of(from_stdin) and LEFT_UNSEEDED <= rules_of(from_stdin)
    on_disk.write_text(SEEDED_TRAIN, encoding="utf-8")
    assert from_stdin == scan_json("pkg/train.py", "--no-cache")
    # With no path at all, --stdin-filename alone reads stdin too.
    assert scan_json("--stdin-filename", "pkg/train.py", input=SEEDED_TRAIN) == from_stdin


def test_stdin_without_a_folder_on_disk(project):
    report = scan_json("-", "--stdin-filename", "nowhere/train.py", input=SEEDED_TRAIN)
    assert not UNSEEDED & rules_of(report)  # an unknown helper: no claim about what it seeds
    assert {f["path"] for f in report["findings"]} == {"nowhere/train.py"}
    unnamed = scan_json("-", input=TRAIN)
    assert {f["path"] for f in unnamed["findings"]} == {"-"} and "ACL202" in rules_of(unnamed)


def test_stdin_errors_are_reported_like_files(project):
    result = invoke("scan", "-", "--stdin-filename", "bad.py", "--format", "json", input="x = = 1\n")
    assert result.exit_code == 1
    [error] = json.loads(result.stdout)["errors"]
    assert (error["path"], error["code"]) == ("bad.py", "E999")
    shell = scan_json("-", "--stdin-filename", "run.sh", input="torchrun --nproc_per_node 8 train.py\n")
    assert shell["files_scanned"] == 1 and shell["errors"] == []


@pytest.mark.parametrize("args", [
    ["-", "other.py"],
    ["other.py", "--stdin-filename", "x.py"],
    ["-", "--fix"],
    ["-", "--diff"],
])
def test_stdin_usage_errors(project, args):
    result = invoke("scan", *args, input=TRAIN)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output


def test_stdin_end_to_end(project):
    write(project, "pkg/utils/seeding.py", SEEDING)
    proc = run_acclint("check", "-", "--stdin-filename", "pkg/train.py", "--select", "ACL202,ACL101,ACL104",
                       cwd=project, input=SEEDED_TRAIN)
    assert proc.returncode == 1, proc.stderr
    assert "pkg/train.py:5:5: ACL202" in proc.stdout and "pkg/train.py:3:4: ACL104" in proc.stdout
    assert "ACL101" not in proc.stdout


# --------------------------------------------------------------------------------------------
# NO_COLOR, FORCE_COLOR


@pytest.mark.parametrize("env, args, coloured", [
    ({}, [], False),  # a pipe is no terminal
    ({"FORCE_COLOR": "1"}, [], True),
    ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, [], False),
    ({"NO_COLOR": ""}, ["--color"], True),
    ({"NO_COLOR": "1"}, ["--color"], True),  # the command line wins
    ({"FORCE_COLOR": "1"}, ["--no-color"], False),
    ({"FORCE_COLOR": ""}, [], False),  # empty means unset
    ({"FORCE_COLOR": "1"}, ["--format", "json"], False),
])
def test_colour_environment_variables(project, env, args, coloured):
    write(project, "train.py", TRAIN)
    proc = run_acclint("scan", "train.py", "--select", "ACL202", *args, cwd=project, env_extra=env)
    assert proc.returncode == 1, proc.stderr
    assert ("\x1b[" in proc.stdout) is coloured


def test_without_colour_every_line_names_its_severity():
    """With NO_COLOR (as in a CI log) the bundled examples' report tells info from warnings on every finding
    line, in words, and lists the info findings after the warnings under their own heading."""
    from acclint.reports.text import INFO_HEADING

    proc = run_acclint("scan", REPO / "examples", "--no-cache", cwd=REPO, env_extra={"NO_COLOR": "1"})
    assert proc.returncode == 1 and "\x1b[" not in proc.stdout, proc.stderr
    lines = proc.stdout.splitlines()
    firsts = [line for line in lines if re.match(r"\S+:\d+:\d+: ", line)]  # each finding's first line
    severities = [re.match(r"\S+:\d+:\d+: ACL\d{3} (error|warning|info) \[", line).group(1) for line in firsts]
    assert "warning" in severities and "info" in severities
    assert severities == sorted(severities, key=lambda word: word == "info")  # every warning before any info
    heading = lines.index(INFO_HEADING)
    after = [line for line in lines[heading + 1:] if re.match(r"\S+:\d+:\d+: ", line)]
    assert after and all(" info [" in line for line in after)  # under the heading, info only
    assert re.fullmatch(r"Found \d+ findings \(\d+ warnings, \d+ info\) in \d+ files\.", lines[-1])


def test_force_color_leaves_a_report_file_plain(project):
    write(project, "train.py", TRAIN)
    run_acclint("scan", "train.py", "-o", "out.txt", cwd=project, env_extra={"FORCE_COLOR": "1"})
    text = (project / "out.txt").read_text(encoding="utf-8")
    assert "ACL202" in text and "\x1b[" not in text


# --------------------------------------------------------------------------------------------
# .gitignore


def test_gitignore_is_respected_unless_turned_off(project):
    (project / ".git").mkdir()
    write(project, ".gitignore", "generated/\n*_pb2.py\n")
    # Each file differs from the others (byte-identical copies would be shown once, linter.copies).
    write(project, "train.py", TRAIN)
    write(project, "generated/train_gen.py", TRAIN + "# generated\n")
    write(project, "proto_pb2.py", TRAIN + "# protobuf\n")
    report = scan_json(".", "--select", "ACL202")
    assert {f["path"] for f in report["findings"]} == {"train.py"} and report["files_scanned"] == 1
    every = scan_json(".", "--select", "ACL202", "--no-respect-gitignore")
    assert {f["path"] for f in every["findings"]} == {"train.py", "generated/train_gen.py", "proto_pb2.py"}
    set_config(project, "respect-gitignore = false\n")
    assert scan_json(".", "--select", "ACL202")["files_scanned"] == 3
    assert scan_json(".", "--select", "ACL202", "--respect-gitignore")["files_scanned"] == 1
    # A file named on the command line (what pre-commit passes) is scanned even when ignored.
    assert rules_of(scan_json("proto_pb2.py", "--select", "ACL202", "--respect-gitignore")) == {"ACL202"}


# --------------------------------------------------------------------------------------------
# --fix, --no-fix, --hide-fix


FIXED_LINE = "export PYTHONHASHSEED=0"
# A launch script beside TRAIN: ACL102's safe fix exports PYTHONHASHSEED before its launch line.
LAUNCH = "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py\n"


def test_no_fix_cancels_fix_from_config_and_earlier_flags(project):
    write(project, "train.py", TRAIN)
    path = write(project, "run.sh", LAUNCH)
    set_config(project, 'select = ["ACL102"]\nfix = true\n')
    cancelled = invoke("scan", "train.py", "--no-fix")
    assert path.read_text(encoding="utf-8") == LAUNCH  # nothing applied
    assert "ACL102" in cancelled.stdout
    assert "--no-fix now means" in cancelled.stderr and "--hide-fix" in cancelled.stderr
    invoke("scan", "train.py", "--fix", "--no-fix")  # the last one wins
    assert path.read_text(encoding="utf-8") == LAUNCH

    fixed = invoke("scan", "train.py")  # the config's fix = true
    assert FIXED_LINE in path.read_text(encoding="utf-8")
    assert "ACL102" not in fixed.stdout and "--no-fix" not in fixed.stderr

    path.write_text(LAUNCH, encoding="utf-8")
    invoke("scan", "train.py", "--no-fix", "--fix")
    assert FIXED_LINE in path.read_text(encoding="utf-8")


def test_hide_fix_hides_the_fix_text_only(project):
    write(project, "train.py", TRAIN)
    shown = invoke("scan", "train.py", "--select", "ACL202", "--no-color")
    hidden = invoke("scan", "train.py", "--select", "ACL202", "--no-color", "--hide-fix")
    assert "fix: torch.backends.cudnn.benchmark = False" in shown.stdout
    assert "fix:" not in hidden.stdout and "ACL202" in hidden.stdout
    assert hidden.exit_code == shown.exit_code == 1
    set_config(project, "fix = 1\n")
    bad = invoke("scan", "train.py")
    assert bad.exit_code == 2 and "fix must be true or false" in bad.output
