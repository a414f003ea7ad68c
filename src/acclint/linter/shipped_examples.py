"""An example a copied project ships, beside the script its launch scripts actually train with.

A model folder is often a copy of a library project (its own setup.py or pyproject.toml, its package, its
`examples/` or `references/` folder), adapted so that one script trains the model: the folder's launch
scripts (`test/train_full_8p.sh`) start that script. The other training scripts under the copy's example
folders are the library's own examples (a toy run on random data, another task's reference script): no
launch script of the project starts them, so running them is not the training run being migrated. The
`trains` premise says so (linter.training_run).

Only what is on disk beside the entry decides (the project root above it and the launch scripts in it and
one folder below), never what else the scan was given. A launch after a `cd` into a folder of the
project (`cd $cur_path/references/classification`) is looked up there. A launch whose script cannot be
found on disk may start this entry, so the claim is made only when every launch of the project's own
scripts resolves to another file.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Optional

from acclint.knowledge import table
from acclint.linter.shell.model import ShellReadError
from acclint.linter.shell.reader import read_shell_script

_MAX_SCRIPTS = 64  # launch scripts read per project root: a model folder has a handful


def _roles() -> dict:
    return table("training")["roles"]


def shipped_example(path: str, abspath: str) -> Optional[str]:
    """Why the entry at `abspath` (reported as `path`) is an example the copied project ships and its launch
    scripts do not run, or None."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    holders = frozenset(_roles()["example_folders"])
    depth = next((len(parts) - 1 - i for i, name in enumerate(parts[:-1]) if name.lower() in holders), None)
    if depth is None:
        return None
    examples = abspath
    for _ in range(depth):
        examples = os.path.dirname(examples)
    root = os.path.dirname(examples)
    marker = _packaging_marker(root)
    if marker is None:
        return None
    launched = _launched_scripts(root, examples)
    if not launched or None in launched or os.path.normpath(abspath) in launched:
        return None
    started, where = sorted(launched.items())[0]
    shown_root = "/".join(parts[:len(parts) - 1 - depth]) or "."
    return (f"{path} is an example shipped with the project at {shown_root} (its own {marker}), whose launch "
            f"scripts start {os.path.relpath(started, root)} ({where}) and never this script: not the training "
            "run being migrated")


def _packaging_marker(folder: str) -> Optional[str]:
    markers = _roles()["packaging_markers"]
    return next((name for name in markers if os.path.isfile(os.path.join(folder, name))), None)


@lru_cache(maxsize=256)
def _launched_scripts(root: str, examples: str) -> dict:
    """abspath of each Python script the project's own launch scripts start -> where (script:line); a key
    None for a launch whose script is not found on disk. Launch scripts are read at the project root and
    one folder below it, outside its example, test and CI folders."""
    skipped = frozenset(_roles()["example_folders"]) | frozenset(_roles()["test_folders"]) \
        | frozenset(_roles()["ci_folders"])
    out: dict = {}
    for shell in _shell_scripts(root, skipped)[:_MAX_SCRIPTS]:
        try:
            script = read_shell_script(shell)
        except (ShellReadError, RecursionError):
            continue
        folders = _cd_folders(shell)
        for launch in script.launches:
            if not launch.script or not launch.script.endswith(".py"):
                continue
            found = _resolve(shell, launch.script, root, folders.get(launch.span.line))
            where = f"{os.path.relpath(shell, root)}:{launch.span.line}"
            out.setdefault(found, where)
    return out


def _shell_scripts(root: str, skipped: frozenset) -> list:
    found = []
    for folder in [root, *_subfolders(root, skipped)]:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        found += [os.path.join(folder, n) for n in names if n.endswith(".sh") and os.path.isfile(os.path.join(folder, n))]
    return found


def _subfolders(root: str, skipped: frozenset) -> list:
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    return [os.path.join(root, n) for n in names
            if n.lower() not in skipped and not n.startswith(".") and os.path.isdir(os.path.join(root, n))]


_CD = re.compile(r"^\s*cd\s+[\"']?([^\s\"';&|]+)")
_VARIABLE_PREFIX = re.compile(r"^\$(\{\w+\}|\w+)/")


def _cd_folders(shell: str) -> dict:
    """line -> the folder (relative to the project root) of the last `cd` written above it, where the
    folder is a literal path, alone or after one variable (`cd $cur_path/references/classification`: launch
    scripts of a model folder `cd` to its top first, from `pwd`). Lines after a `cd` acclint cannot read
    map to None."""
    try:
        with open(shell, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return {}
    out, current = {}, None
    for number, text in enumerate(lines, start=1):
        match = _CD.match(text)
        if match:
            target = _VARIABLE_PREFIX.sub("", match.group(1))
            current = None if "$" in target or "`" in target or target.startswith(("/", "..", "~")) else target
        out[number] = current
    return out


def _resolve(shell: str, script: str, root: str, cd: Optional[str] = None) -> Optional[str]:
    """The file a launch line's script names, looked up as linter.project does: beside the launch script,
    then in each folder above it up to the project root; after a `cd` into a folder of the project, in that
    folder first."""
    if os.path.isabs(script):
        return os.path.normpath(script) if os.path.isfile(script) else None
    if cd:
        for base in (root, os.path.dirname(shell)):
            candidate = os.path.normpath(os.path.join(base, cd, script))
            if os.path.isfile(candidate):
                return candidate
    folder = os.path.dirname(shell)
    while True:
        candidate = os.path.normpath(os.path.join(folder, script))
        if os.path.isfile(candidate):
            return candidate
        if folder == root or os.path.dirname(folder) == folder or not folder.startswith(root):
            return None
        folder = os.path.dirname(folder)
