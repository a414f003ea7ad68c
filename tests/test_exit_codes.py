"""Exit codes as CI reads them: 0 clean, 1 findings or files that could not be read or parsed,
2 usage or internal error; --exit-zero turns 1 into 0 and never 2 into 0. Per-file errors carry a
code (E902 io-error, E999 syntax-error, E000 internal-error) in every report format."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from acclint.cli import main
from acclint.exit_codes import exit_status
from acclint.findings import INTERNAL_ERROR, IO_ERROR, SYNTAX_ERROR, FileError, ScanResult

LIBRARY = "def f():\n    return 1\n"
SYNTAX_ERROR_SOURCE = "import os\n\nx = = 1\n"
LATIN1 = b'"""Module."""\nname = "caf\xe9"\n'


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "lib.py").write_text(LIBRARY, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(result.output) from result.exception
    return result


BAD_INPUTS = {
    "missing-path": (None, "missing.py", IO_ERROR, "no such file"),
    "syntax-error": (SYNTAX_ERROR_SOURCE, "bad.py", SYNTAX_ERROR, "syntax error at line 3"),
    "not-utf8": (LATIN1, "latin.py", IO_ERROR, "not valid utf-8"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_exits_1_and_the_other_files_are_still_scanned(project, name):
    content, path, code, words = BAD_INPUTS[name]
    if isinstance(content, str):
        (project / path).write_text(content, encoding="utf-8")
    elif content is not None:
        (project / path).write_bytes(content)
    clean = invoke("scan", "lib.py", "--format", "json")
    assert clean.exit_code == 0, clean.output  # the good file alone passes...

    result = invoke("scan", "lib.py", path, "--format", "json")
    assert result.exit_code == 1, result.output  # ...and the bad one fails the run
    report = json.loads(result.stdout)
    assert report["files_scanned"] == 1 and report["findings"] == []
    [error] = report["errors"]
    assert (error["path"], error["code"]) == (path, code)
    assert words in error["message"].lower()

    assert invoke("scan", "lib.py", path, "--exit-zero").exit_code == 0
    assert invoke("check", "lib.py", path).exit_code == 1  # ruff's name behaves the same


def test_each_format_shows_the_error_and_its_code(project):
    (project / "bad.py").write_text(SYNTAX_ERROR_SOURCE, encoding="utf-8")
    text = invoke("scan", ".", "--no-color")
    assert "bad.py: E999 error [syntax-error] syntax error at line 3" in text.stdout
    github = invoke("scan", ".", "--format", "github")
    assert "::error file=bad.py,title=acclint E999 (syntax-error)::syntax error at line 3" in github.stdout
    sarif = json.loads(invoke("scan", ".", "--format", "sarif").stdout)
    [note] = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert note["descriptor"] == {"id": "E999"} and note["level"] == "error"
    assert all(r.exit_code == 1 for r in (text, github))


def test_usage_errors_stay_2_with_exit_zero(project):
    result = invoke("scan", ".", "--exit-zero", "--select", "NOPE")
    assert result.exit_code == 2 and "NOPE" in result.output


def test_exit_zero_with_findings(project):
    (project / "train.py").write_text(
        "import torch\nif __name__ == '__main__':\n    torch.backends.cudnn.benchmark = True\n"
        "    model = torch.nn.Linear(2, 1)\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    model(torch.ones(2)).sum().backward()\n    optimizer.step()\n", encoding="utf-8")
    assert invoke("scan", "train.py", "--select", "ACL202").exit_code == 1
    result = invoke("scan", "train.py", "--select", "ACL202", "--exit-zero")
    assert result.exit_code == 0 and "ACL202" in result.stdout  # still reported


@pytest.mark.parametrize("errors, failed, exit_zero, expected", [
    ([], False, False, 0),
    ([], True, False, 1),
    ([], True, True, 0),
    ([FileError("a.py", "no such file", IO_ERROR)], False, False, 1),
    ([FileError("a.py", "syntax error", SYNTAX_ERROR)], False, True, 0),
    ([FileError("a.py", "internal error: KeyError", INTERNAL_ERROR)], False, False, 2),
    ([FileError("a.py", "internal error: KeyError", INTERNAL_ERROR)], True, True, 2),
])
def test_exit_status(errors, failed, exit_zero, expected):
    assert exit_status(ScanResult(1, errors=errors), failed=failed, exit_zero=exit_zero) == expected
