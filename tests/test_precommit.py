"""The published pre-commit hook (`.pre-commit-hooks.yaml`), run by the real `pre-commit try-repo`.

`try-repo` installs this repository into its own virtualenv (dependencies come from PyPI), so
the first run takes a minute or two and needs the network; later runs in the same session
reuse the environment cached in a session-wide PRE_COMMIT_HOME.

We hand `try-repo` a one-commit snapshot of the working tree rather than the checkout itself:
on the checkout it fails outright while the branch has no commit (it starts from `HEAD`), and
its "uncommitted changes" shadow commit only takes tracked files (`git add -u`), so new,
untracked files — a new module, or this hook file — would be silently left out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
HOOKS_FILE = REPO_ROOT / ".pre-commit-hooks.yaml"
# Building the hook's virtualenv (pip install of acclint and its dependencies) dominates.
TRY_REPO_TIMEOUT_S = 1200

# ACL202: cudnn.benchmark in a torch training script (a __main__ guard and a backward pass).
BAD_TRAIN_SCRIPT = """\
import torch


def train(model, batches, optimizer):
    for inputs, targets in batches:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    torch.backends.cudnn.benchmark = True
    model = torch.nn.Linear(4, 1)
    batches = [(torch.ones(2, 4), torch.zeros(2, 1))]
    train(model, batches, torch.optim.SGD(model.parameters(), lr=0.1))
"""

CLEAN_MODULE = """\
def moving_average(values, window):
    \"\"\"Plain Python: nothing here can diverge between devices.\"\"\"
    total = sum(values[:window])
    averages = [total / window]
    for old, new in zip(values, values[window:]):
        total += new - old
        averages.append(total / window)
    return averages
"""


def _env(**extra: str) -> dict[str, str]:
    # Drop GIT_* variables: when the suite runs inside a git hook, GIT_DIR / GIT_INDEX_FILE
    # would point our git commands (and pre-commit's) at the outer repository.
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(extra)
    return env


def _git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=_env(), capture_output=True, text=True, check=True
    )
    return done.stdout


def _init_repo(path: Path) -> None:
    _git("init", "-q", cwd=path)
    _git("config", "user.name", "acclint tests", cwd=path)
    _git("config", "user.email", "acclint-tests@example.invalid", cwd=path)
    _git("config", "commit.gpgsign", "false", cwd=path)


def test_hook_definition():
    hooks = yaml.safe_load(HOOKS_FILE.read_text(encoding="utf-8"))
    (hook,) = [hook for hook in hooks if hook["id"] == "acclint"]
    assert hook["name"] == "acclint"
    assert hook["entry"] == "acclint scan"
    assert hook["language"] == "python"
    assert set(hook["types_or"]) == {"python", "shell"}
    assert hook["require_serial"] is True
    # pre-commit's own schema check of the manifest (no network, no install).
    check = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-manifest", str(HOOKS_FILE)],
        capture_output=True, text=True, env=_env(),
    )
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory) -> Path:
    """This repository's working tree (tracked and untracked, minus ignored files), committed."""
    snapshot = tmp_path_factory.mktemp("acclint-hook-repo")
    listing = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=REPO_ROOT)
    for relative in filter(None, listing.split("\0")):
        source = REPO_ROOT / relative
        if not source.is_file():  # tracked but deleted in the working tree
            continue
        target = snapshot / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
    _init_repo(snapshot)
    _git("add", "-A", cwd=snapshot)
    _git("commit", "-q", "-m", "snapshot of the acclint working tree", cwd=snapshot)
    return snapshot


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory) -> Path:
    # Isolated from the user's ~/.cache/pre-commit, shared by the tests of this session.
    return tmp_path_factory.mktemp("pre-commit-home")


# The probe is ACL202 (cudnn.benchmark = True); whether it runs by default is measured data
# (tests/test_maturity.py), so the projects turn preview rules on.
PREVIEW_ON = "[tool.acclint]\npreview = true\n"


def _project(path: Path, files: dict[str, str]) -> Path:
    path.mkdir()
    _init_repo(path)
    for name, source in {"pyproject.toml": PREVIEW_ON, **files}.items():
        (path / name).write_text(source, encoding="utf-8")
    _git("add", "-A", cwd=path)
    return path


def _try_repo(project: Path, hook_repo: Path, home: Path, all_files: bool = True) -> subprocess.CompletedProcess:
    # Without --all-files pre-commit passes only the staged files, as on `git commit`.
    command = [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), "acclint",
               *(["--all-files"] if all_files else []), "--color", "never"]
    return subprocess.run(
        command,
        cwd=project,
        env=_env(PRE_COMMIT_HOME=str(home)),
        capture_output=True,
        text=True,
        timeout=TRY_REPO_TIMEOUT_S,
    )


def test_hook_fails_on_a_violation(tmp_path, hook_repo, pre_commit_home):
    project = _project(tmp_path / "bad", {"train.py": BAD_TRAIN_SCRIPT, "stats.py": CLEAN_MODULE})
    run = _try_repo(project, hook_repo, pre_commit_home)
    output = run.stdout + run.stderr
    assert run.returncode != 0, output
    assert "ACL202" in output, output
    assert "train.py" in output, output
    assert "stats.py:" not in output, output  # the clean file draws no finding


def test_hook_passes_on_clean_files(tmp_path, hook_repo, pre_commit_home):
    project = _project(tmp_path / "clean", {"stats.py": CLEAN_MODULE})
    run = _try_repo(project, hook_repo, pre_commit_home)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "Passed" in output, output


# A seed helper in its own module, and an entry script that relies on it.
SEED_HELPER = """\
import random

import numpy as np
import torch


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
"""

SEEDED_TRAIN_SCRIPT = """\
import os

import torch
from seeding import seed_everything

os.environ["PYTHONHASHSEED"] = "0"


if __name__ == "__main__":
    seed_everything(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(4)).sum().backward()
    optimizer.step()
"""


def _commit_then_stage(path: Path, committed: dict[str, str], staged: dict[str, str]) -> Path:
    project = _project(path, committed)
    _git("commit", "-q", "-m", "before", cwd=project)
    for name, source in staged.items():
        (project / name).write_text(source, encoding="utf-8")
    _git("add", *staged, cwd=project)
    return project


def test_hook_on_a_staged_entry_script_reads_its_committed_seed_helper(tmp_path, hook_repo, pre_commit_home):
    project = _commit_then_stage(tmp_path / "entry", {"seeding.py": SEED_HELPER}, {"train.py": SEEDED_TRAIN_SCRIPT})
    run = _try_repo(project, hook_repo, pre_commit_home, all_files=False)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "Passed" in output, output


def test_hook_on_a_staged_helper_reports_its_explicit_setting(tmp_path, hook_repo, pre_commit_home):
    helper = SEED_HELPER + "\n\ndef fast_backend():\n    torch.backends.cudnn.benchmark = True\n"
    project = _commit_then_stage(tmp_path / "helper", {"train.py": SEEDED_TRAIN_SCRIPT, "seeding.py": SEED_HELPER},
                                 {"seeding.py": helper})
    run = _try_repo(project, hook_repo, pre_commit_home, all_files=False)
    output = run.stdout + run.stderr
    assert run.returncode != 0, output
    assert "seeding.py:15:5: ACL202" in output, output
    assert "train.py:" not in output, output  # not staged: not reported


def test_hook_runs_with_the_cache_on(tmp_path, hook_repo, pre_commit_home):
    """The hook writes and reuses `.acclint_cache/` at the project root, which git ignores."""
    project = _project(tmp_path / "cached", {"train.py": BAD_TRAIN_SCRIPT, "stats.py": CLEAN_MODULE})
    first = _try_repo(project, hook_repo, pre_commit_home)
    cache = project / ".acclint_cache"
    entries = [p for p in cache.rglob("*") if p.is_file() and p.parent.parent.parent == cache]
    assert len(entries) == 2, first.stdout + first.stderr
    stamps = {p: p.stat().st_mtime_ns for p in entries}
    second = _try_repo(project, hook_repo, pre_commit_home)
    assert first.returncode == second.returncode != 0
    assert "ACL202" in second.stdout + second.stderr
    assert {p: p.stat().st_mtime_ns for p in entries} == stamps  # read, not rewritten
    assert ".acclint_cache" not in _git("status", "--porcelain", "--untracked-files=all", cwd=project)
