"""One training setup from a path: a launch script (with the Python entry it runs), a Python
script, a config file, or a folder holding any of these."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Mapping, Optional

from acclint.linter.analyze import analyze_file
from acclint.linter.discovery import PYTHON_SUFFIXES, SHELL_SUFFIXES, SKIPPED_DIRS
from acclint.linter.facts import FileFacts
from acclint.linter.source import read_source
from acclint.setups.configs import CONFIG_SUFFIXES, extract_config
from acclint.setups.python import extract_python
from acclint.setups.keys import LAUNCHER_STACKS
from acclint.setups.record import Setup, SetupError
from acclint.setups.shell import entry_script, extract_shell, launcher_of_entry

MAX_FOLDER_FILES = 500
NOTHING_PARSED: Mapping = MappingProxyType({})


def extract(path: str, parsed: Mapping[str, FileFacts] = NOTHING_PARSED) -> Setup:
    """The setup at `path`. Raises SetupError when nothing there can be read at all. `parsed`: the
    facts of Python files already parsed (by absolute path), so that no file is parsed twice."""
    target = Path(path)
    if target.is_dir():
        return _folder(target, path, parsed)
    if not target.exists():
        raise SetupError(f"{path}: no such file or folder")
    setup = _file(target, path, parsed)
    if setup is None:
        raise SetupError(f"{path}: not a launch script (.sh), Python script (.py) or config (.yaml, .json, .toml)")
    return setup


def _file(target: Path, display: str, parsed: Mapping) -> Optional[Setup]:
    suffix = target.suffix.lower()
    if suffix in SHELL_SUFFIXES:
        return _launch_script(target, display, parsed)
    if suffix in PYTHON_SUFFIXES:
        return _python(target, display, parsed)
    if suffix in CONFIG_SUFFIXES:
        source = read_source(target, python=False)
        if source.text is None:
            raise SetupError(f"{display}: {source.error or source.skip}")
        return extract_config(source.text, display, suffix)
    return None


def _parsed(target: Path, display: str, parsed: Mapping = NOTHING_PARSED) -> FileFacts:
    known = parsed.get(os.path.abspath(target))
    if known is not None:
        return replace(known, path=display)  # a copy: shown under this side's spelling of the path
    outcome = analyze_file(os.path.abspath(target), display, [])
    if outcome.facts is None:
        raise SetupError(f"{display}: {outcome.error or outcome.skip}")
    return outcome.facts


def _python(target: Path, display: str, parsed: Mapping, overrides: Optional[dict] = None) -> Setup:
    return extract_python(_parsed(target, display, parsed), overrides)


def _launch_script(target: Path, display: str, parsed: Mapping) -> Setup:
    shell = _parsed(target, display)
    setup, launch = extract_shell(shell.script, display)
    if launch is None:
        return setup
    entry = entry_script(str(target), launch)
    if entry is None:
        return setup
    entry_display = os.path.relpath(entry) if not os.path.isabs(display) else entry
    try:
        program = _python(Path(entry), entry_display, parsed, overrides=setup.settings)
    except SetupError as exc:
        setup.problems.append(f"{exc} (the entry script of {display})")
        return setup
    # The launch's flags override the entry's argparse defaults; the entry adds what it builds.
    setup.rename(program.aliases)
    program.merge(setup)
    program.path, program.kind = display, "launch"
    program.launcher = _more_specific(setup.launcher, launcher_of_entry(program, setup))
    return program


def _more_specific(*launchers):
    """MindSpeed-LLM over MindSpeed over Megatron-LM: each adds to the one before."""
    ranked = [name for name in launchers if name is not None]
    return max(ranked, key=list(LAUNCHER_STACKS).index) if ranked else None


def _folder(root: Path, display: str, parsed: Mapping) -> Setup:
    setup = Setup(path=display, kind="folder")
    found = folder_files(root)
    if not found:
        raise SetupError(f"{display}: no launch script, Python script or config in this folder")
    # Python first, then configs, then launch scripts: a launch's values are what runs.
    order = {**{s: 0 for s in PYTHON_SUFFIXES}, **{s: 1 for s in CONFIG_SUFFIXES}, **{s: 2 for s in SHELL_SUFFIXES}}
    for file in sorted(found, key=lambda f: (order[f.suffix.lower()], str(f))):
        shown = os.path.join(display, os.path.relpath(file, root))
        try:
            part = _file(file, shown, parsed)
        except SetupError as exc:
            setup.problems.append(str(exc))
            continue
        if part is not None and (part.settings or part.kind != "python"):
            setup.merge(part)
    return setup


def folder_files(root: Path) -> list:
    """The launch scripts, Python scripts and configs under `root`, in a stable order (at most
    MAX_FOLDER_FILES)."""
    wanted = set(PYTHON_SUFFIXES) | set(SHELL_SUFFIXES) | set(CONFIG_SUFFIXES)
    found: list = []
    for folder, folders, files in os.walk(root):
        folders[:] = sorted(f for f in folders if f not in SKIPPED_DIRS and not f.startswith("."))
        for name in sorted(files):
            if Path(name).suffix.lower() in wanted:
                found.append(Path(folder, name))
                if len(found) >= MAX_FOLDER_FILES:
                    return found
    return found
