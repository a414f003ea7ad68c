"""The progress line on stderr, with `acclint scan` started on a real pseudo-terminal."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
FILES = 24


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("progress")
    for index in range(FILES):
        (root / f"mod{index}.py").write_text(f"import torch\nX = torch.ones({index})\n", encoding="utf-8")
    return root


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH", "")]))
    env.update(extra)
    return env


def _scan(project: Path, *args: str, stderr_tty: bool = True, **env) -> tuple:
    """(stdout, stderr) of a scan whose stderr (and stdout) is a terminal unless told otherwise."""
    master, slave = pty.openpty()
    command = [sys.executable, "-m", "acclint", "scan", ".", "--no-cache", "--jobs", "1", *args]
    # Files, not pipes: nothing reads the outputs until the child exits, and a SARIF log with
    # every rule's metadata outgrows a pipe's buffer (the child would block writing it).
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    process = subprocess.Popen(command, cwd=project, env=_env(**env), stdin=slave, stdout=out,
                               stderr=slave if stderr_tty else err)
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        elif process.poll() is not None:
            break
    process.wait(timeout=120)
    os.close(master)
    out.seek(0), err.seek(0)
    return out.read().decode(), (seen if stderr_tty else err.read()).decode()


def test_progress_shows_files_done_and_phase_on_a_terminal(project):
    # ACCLINT_PROGRESS_DELAY=0: show it at once instead of after a second, so a small scan shows it.
    _, terminal = _scan(project, ACCLINT_PROGRESS_DELAY="0")
    assert f"acclint: analysing files {FILES}/{FILES}" in terminal
    assert "acclint: analysing files 0/" in terminal
    assert "checking programs" in terminal
    assert terminal.endswith("\r\x1b[K")  # the line is erased at the end


def test_nothing_shows_before_the_delay(project):
    # The line waits `delay` seconds (about one by default) so short scans stay silent; a delay
    # longer than this scan shows that the wait gates it, without timing the scan.
    _, terminal = _scan(project, ACCLINT_PROGRESS_DELAY="3600")
    assert "acclint:" not in terminal and "\x1b[K" not in terminal


@pytest.mark.parametrize("args,env,tty", [
    ((), {}, False),  # piped
    ((), {"CI": "true"}, True),
    (("--quiet",), {}, True),
    (("--format", "json"), {}, True),
    (("--format", "sarif"), {}, True),
], ids=["piped", "ci", "quiet", "json", "sarif"])
def test_no_progress_when_piped_in_ci_quiet_or_machine_output(project, args, env, tty):
    _, terminal = _scan(project, *args, stderr_tty=tty, ACCLINT_PROGRESS_DELAY="0", **env)
    assert "acclint: analysing" not in terminal and "\x1b[K" not in terminal


def test_json_to_a_file_still_shows_progress(project, tmp_path):
    _, terminal = _scan(project, "--format", "json", "-o", str(tmp_path / "out.json"), ACCLINT_PROGRESS_DELAY="0")
    assert "acclint: analysing files" in terminal
    assert (tmp_path / "out.json").read_text().startswith("{")
