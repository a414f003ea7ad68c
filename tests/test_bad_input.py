"""Files a scan cannot (or must not) analyse: each one is reported, none stops the scan.

The whole-folder test runs `python -m acclint` in a subprocess with a timeout, so a FIFO or a
symlink loop that made acclint block or recurse forever fails the test instead of hanging it.
An unreadable file needs a user that permissions apply to: as root, the scan runs as `nobody`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SRC = REPO_ROOT / "src"
NOBODY = 65534
TIMEOUT_S = 180

# ACL202 on line 3 (cudnn.benchmark = True in a training entry point).
TRAIN = """\
import torch
if __name__ == "__main__":
    torch.backends.cudnn.benchmark = True
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(2)).sum().backward()
    opt.step()
"""

needs_symlinks = pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32",
                                    reason="needs POSIX symlinks")
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")


def subprocess_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH", "")]))
    return env


def run_acclint(args, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acclint", *map(str, args)], cwd=cwd, env=subprocess_env(),
                          capture_output=True, text=True, timeout=TIMEOUT_S, **kwargs)


def assert_no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stdout, proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr


def entries(report: dict) -> dict:
    """path -> ("error", message) or ("skipped", reason)."""
    out = {}
    for error in report["errors"]:
        out[error["path"]] = ("error", error["message"])
    for item in report["skipped"]:
        out[item["path"]] = ("skipped", item["reason"])
    return out


@pytest.fixture
def world_dir():
    """A temporary folder that another user can traverse (pytest's tmp_path is 0700 under root)."""
    path = Path(tempfile.mkdtemp(prefix="acclint-bad-input-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for root, dirs, files in os.walk(path):
            for name in dirs:
                folder = os.path.join(root, name)
                if not os.path.islink(folder):
                    with contextlib.suppress(OSError):
                        os.chmod(folder, 0o755)
        shutil.rmtree(path, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# running as an unprivileged user


def _drop_privileges() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


# When the interpreter itself is out of `nobody`'s reach (e.g. a pyenv under /root, mode 0700),
# the child starts as root, imports acclint and runs the same scan once with output discarded (so
# every lazily imported module and codec is loaded; the big generated file is left out of this
# warm-up, for time), then drops to `nobody` and runs it for real.
_DROP_AFTER_WARMUP = r"""
import contextlib, io, os, sys
from acclint.cli import main
args = sys.argv[1:]
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main(args + ["--exclude", "big.py"], prog_name="acclint", standalone_mode=False)
    except SystemExit:
        pass
os.setgroups([]); os.setgid(65534); os.setuid(65534)
assert os.geteuid() == 65534
main(args, prog_name="acclint")
"""


def _interpreter_runs_unprivileged() -> bool:
    try:
        proc = subprocess.run([sys.executable, "-c", "import acclint.cli"], env=subprocess_env(),
                              preexec_fn=_drop_privileges, capture_output=True, timeout=60, cwd="/")
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def run_acclint_unprivileged(args, cwd: Path) -> subprocess.CompletedProcess:
    if os.geteuid() != 0:
        return run_acclint(args, cwd)
    if _interpreter_runs_unprivileged():
        return run_acclint(args, cwd, preexec_fn=_drop_privileges)
    return subprocess.run([sys.executable, "-c", _DROP_AFTER_WARMUP, *map(str, args)], cwd=cwd,
                          env=subprocess_env(), capture_output=True, text=True, timeout=TIMEOUT_S)


# --------------------------------------------------------------------------------------------
# the folder of bad inputs


SYNTAX_ERROR = "import os\n\nx = = 1\n"
# Latin-1 bytes, no coding cookie; the first two lines are plain ASCII (see the test of line 1/2).
LATIN1_NO_COOKIE = b'"""Module."""\nimport os\nname = "caf\xe9"\n'
LATIN1_WITH_COOKIE = b'# -*- coding: latin-1 -*-\nname = "caf\xe9 cr\xe8me"\nprint(name)\n'
BINARY = b"\x7fELF\x02\x01\x01\x00\x00\x00\x00" + bytes(range(256)) * 4
BROKEN_SHELL = '#!/bin/bash\nexport PYTHONHASHSEED=0\nif [ "$X" ; then\n  echo "unterminated\nfi\ncase $1 in\n'


def build_bad_folder(root: Path, *, self_loop: bool) -> None:
    (root / "train.py").write_text(TRAIN, encoding="utf-8")
    (root / "syntax_error.py").write_text(SYNTAX_ERROR, encoding="utf-8")
    (root / "latin1_no_cookie.py").write_bytes(LATIN1_NO_COOKIE)
    (root / "latin1_cookie.py").write_bytes(LATIN1_WITH_COOKIE)
    (root / "x.py").write_bytes(BINARY)
    (root / "empty.py").write_bytes(b"")
    with open(root / "big.py", "w", encoding="utf-8") as big:
        big.write('"""Generated: 50,000 lines."""\n')
        for i in range(1, 50_000):
            big.write(f"value_{i} = {i}\n")
    (root / "run.sh").write_text(BROKEN_SHELL, encoding="utf-8")
    loops = root / "loops"
    loops.mkdir()
    os.symlink("..", loops / "parent")  # a folder symlink pointing to its parent
    os.symlink(".", loops / "itself")  # and one pointing to its own folder
    if self_loop:
        os.symlink("self_loop.py", root / "self_loop.py")  # a file symlink pointing to itself
    os.symlink("missing_target.py", root / "dangling.py")
    os.mkfifo(root / "pipe.py")
    unreadable = root / "unreadable.py"
    unreadable.write_text("x = 1\n", encoding="utf-8")
    for path in root.rglob("*"):
        if not path.is_symlink() and path.is_file() and stat.S_ISREG(path.stat().st_mode):
            path.chmod(0o644)
    for path in [root, loops]:
        path.chmod(0o755)
    (root / "pipe.py").chmod(0o666)
    unreadable.chmod(0o000)


SCANNED = {"train.py", "latin1_cookie.py", "empty.py", "big.py", "run.sh"}


@needs_symlinks
@needs_fifo
@pytest.mark.parametrize("self_loop", [
    False,
    pytest.param(True),
], ids=["no-self-loop", "with-self-loop"])
def test_folder_of_bad_inputs(world_dir, self_loop):
    root = world_dir / "project"
    root.mkdir()
    build_bad_folder(root, self_loop=self_loop)

    proc = run_acclint_unprivileged(["scan", "project", "--format", "json", "--jobs", "1", "--preview"], cwd=world_dir)
    assert_no_traceback(proc)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    by_path = entries(report)
    print(json.dumps({k: v for k, v in report.items() if k != "findings"}, indent=1))

    # The good file is still analysed.
    bench = [f for f in report["findings"] if f["rule"] == "ACL202"]
    assert [(f["path"], f["line"]) for f in bench] == [("project/train.py", 3)]
    # Nothing else produced a finding: not the big file, the empty file or the shell script.
    assert {f["path"] for f in report["findings"]} <= {"project/train.py"}

    codes = {error["path"]: error["code"] for error in report["errors"]}
    kind, message = by_path.pop("project/syntax_error.py")
    assert kind == "error" and re.match(r"syntax error at line \d+", message), message
    assert codes["project/syntax_error.py"] == "E999"

    kind, message = by_path.pop("project/latin1_no_cookie.py")
    assert kind == "error" and "utf-8" in message.lower(), message
    assert codes["project/latin1_no_cookie.py"] == "E902"

    kind, reason = by_path.pop("project/x.py")
    assert kind == "skipped" and "binary" in reason.lower()

    kind, reason = by_path.pop("project/pipe.py")
    assert kind == "skipped" and reason

    kind, message = by_path.pop("project/unreadable.py")
    assert kind == "error" and "permission" in message.lower(), message
    assert codes["project/unreadable.py"] == "E902"

    # Symlinks: two folder loops, the dangling link (and the self-loop) are skipped. The exact
    # path shown for a link is the subject of test_skipped_symlink_is_reported_under_its_own_path.
    reasons = sorted(reason for kind, reason in by_path.values() if kind == "skipped")
    loops = [r for r in reasons if "loop" in r.lower()]
    assert len(loops) == 2 + self_loop, reasons
    assert any("broken" in r.lower() or "dangling" in r.lower() for r in reasons), reasons
    assert len(by_path) == 3 + self_loop, by_path

    # Everything else was scanned, and nothing scanned appears among errors or skipped.
    assert report["files_scanned"] == len(SCANNED)
    assert not {f"project/{name}" for name in SCANNED} & set(entries(report))


def test_nonexistent_path_is_an_error_entry(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    proc = run_acclint(["scan", "missing.py", "no_such_dir", "train.py", "--format", "json",
                        "--select", "ACL202"], cwd=tmp_path)
    assert_no_traceback(proc)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert report["files_scanned"] == 1  # the other files are still scanned
    assert [f["rule"] for f in report["findings"]] == ["ACL202"]
    errors = {e["path"]: e["message"] for e in report["errors"]}
    assert set(errors) == {"missing.py", "no_such_dir"}
    assert all("no such file" in m.lower() for m in errors.values()), errors
    assert {e["code"] for e in report["errors"]} == {"E902"}


def test_only_a_nonexistent_path_exits_1(tmp_path):
    """A typo in a CI job's path must fail the job, not pass it with nothing scanned."""
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    proc = run_acclint(["scan", "missing.py", "--format", "json"], cwd=tmp_path)
    assert_no_traceback(proc)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["files_scanned"] == 0 and [e["path"] for e in report["errors"]] == ["missing.py"]
    assert report["errors"][0]["code"] == "E902"
    assert run_acclint(["scan", "missing.py", "--exit-zero"], cwd=tmp_path).returncode == 0


def test_shell_script_with_syntax_errors_is_scanned(tmp_path):
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    (tmp_path / "launch.sh").write_text(
        '#!/bin/bash\nset -e\nexport PYTHONHASHSEED=0\nif [ -z "$A" ; then\n  echo "open quote\n'
        'for x in $(seq 1 ; do\n  python train.py --lr $((1 +\ndone\n}}}\n', encoding="utf-8")
    proc = run_acclint(["scan", ".", "--format", "json", "--preview"], cwd=tmp_path)
    assert_no_traceback(proc)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert report["files_scanned"] == 2
    assert report["errors"] == [] and report["skipped"] == []
    assert "ACL202" in {f["rule"] for f in report["findings"]}


def test_explicit_fifo_argument_does_not_hang(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs os.mkfifo")
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    os.mkfifo(tmp_path / "pipe.py")
    proc = run_acclint(["scan", "pipe.py", "--format", "json"], cwd=tmp_path)
    assert_no_traceback(proc)
    assert proc.returncode == 0
    report = json.loads(proc.stdout)
    assert report["files_scanned"] == 0
    assert [s["path"] for s in report["skipped"]] == ["pipe.py"]


# --------------------------------------------------------------------------------------------
# precise messages, one defect per test


@pytest.mark.parametrize("source, line", [
    ("x = = 1\n", 1),
    ("import os\n\nx = = 1\n", 3),
    pytest.param("def f(:\n    pass\n", 1),
    pytest.param("x = 1\ny = = 2\nz = 3\n", 2),
    pytest.param("a = 1\nb = 2\nc = 3\nd = )\ne = 5\n", 4),
])
def test_syntax_error_line_number(tmp_path, source, line):
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "bad.py").write_text(source, encoding="utf-8")
    with pytest.raises(SyntaxError) as python_says:  # the reference: where Python itself stops
        compile(source, "bad.py", "exec")
    assert python_says.value.lineno == line
    proc = run_acclint(["scan", "bad.py", "--format", "json"], cwd=tmp_path)
    assert_no_traceback(proc)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    [error] = report["errors"]
    assert error["message"].startswith(f"syntax error at line {line}"), error["message"]
    assert error["code"] == "E999"


@pytest.mark.parametrize("bad_line, first_line", [
    pytest.param(1, b'name = "caf\xe9"'),
    pytest.param(1, b"# caf\xe9: a comment"),
    pytest.param(2, b"#!/usr/bin/env python"),
    (2, b"x = 1"),
    (3, b"x = 1"),
    (10, b"# header"),
], ids=["line1", "line1-comment", "line2-after-comment", "line2-after-code", "line3", "line10"])
def test_non_utf8_file_error_mentions_utf8(tmp_path, bad_line, first_line):
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    lines = [first_line] + [b"x = 1"] * 11
    if bad_line > 1:
        lines[bad_line - 1] = b'name = "caf\xe9"'
    (tmp_path / "latin.py").write_bytes(b"\n".join(lines) + b"\n")
    proc = run_acclint(["scan", "latin.py", "--format", "json"], cwd=tmp_path)
    assert_no_traceback(proc)
    assert proc.returncode == 1  # a file that cannot be decoded was not checked: CI must not pass
    report = json.loads(proc.stdout)
    assert report["files_scanned"] == 0
    [error] = report["errors"]
    assert error["path"] == "latin.py" and error["code"] == "E902"
    assert "utf-8" in error["message"].lower(), error["message"]


@needs_symlinks
def test_skipped_symlink_is_reported_under_its_own_path(tmp_path):
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    os.symlink("missing_target.py", tmp_path / "dangling.py")
    (tmp_path / "loops").mkdir()
    os.symlink("..", tmp_path / "loops" / "parent")
    proc = run_acclint(["scan", ".", "--format", "json"], cwd=tmp_path)
    assert_no_traceback(proc)
    report = json.loads(proc.stdout)
    assert {s["path"] for s in report["skipped"]} == {"dangling.py", "loops/parent"}


@needs_symlinks
@pytest.mark.parametrize("args", [
    pytest.param(["."]),
    pytest.param(["train.py", "self.py"]),
    pytest.param(["self.py", "train.py"]),
], ids=["in-folder", "explicit-later", "explicit-first"])
def test_self_referencing_file_symlink_is_skipped(tmp_path, args):
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    os.symlink("self.py", tmp_path / "self.py")
    proc = run_acclint(["scan", *args, "--format", "json", "--select", "ACL202"], cwd=tmp_path)
    assert_no_traceback(proc)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert [f["path"] for f in report["findings"]] == ["train.py"]
    [skipped] = report["skipped"]
    assert skipped["path"] == "self.py" and "loop" in skipped["reason"].lower()
