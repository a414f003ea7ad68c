"""Which files a scan covers: walk the given paths once, skipping VCS, virtualenv and build folders."""

from __future__ import annotations

import errno
import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

from acclint.linter.gitignore import GitIgnore

PYTHON_SUFFIXES = (".py", ".pyi")
SHELL_SUFFIXES = (".sh", ".bash")
SCANNED_SUFFIXES = PYTHON_SUFFIXES + SHELL_SUFFIXES
# Read only when they turn out to be configs acclint knows (msprobe JSON, YAML with Ascend modes).
CONFIG_SUFFIXES = (".json", ".yaml", ".yml")

# Folders that never hold the user's training code.
SKIPPED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".nox", ".mypy_cache",
        ".pytest_cache", ".ruff_cache", "node_modules", "build", "dist", ".eggs", "site-packages",
        ".ipynb_checkpoints",
    }
)


@dataclass
class Discovery:
    files: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    errors: list[tuple[Path, str]] = field(default_factory=list)


def kind_of(path: Path) -> str:
    if path.suffix in CONFIG_SUFFIXES:
        return "config"
    return "shell" if path.suffix in SHELL_SUFFIXES else "python"


def is_excluded(path: Path, root: Path, patterns: Sequence[str]) -> bool:
    if not patterns:
        return False
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        rel = path.as_posix()
    parts = rel.split("/")
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(path.name, pattern):
            return True
        # A pattern naming a folder excludes everything below it.
        if any(fnmatch.fnmatch("/".join(parts[: i + 1]), pattern) for i in range(len(parts) - 1)):
            return True
    return False


def _skipped_dir_name(name: str) -> bool:
    return name in SKIPPED_DIRS or name.endswith(".egg-info")


def would_discover(path: str, root: Path, exclude: Sequence[str] = (), gitignore: Optional[GitIgnore] = None) -> bool:
    """Whether a walk of a folder holding `path` would scan it: a file read for context is one a
    whole-folder scan would have read (not in a build folder, a virtualenv, an excluded path, or
    one git ignores when `gitignore` is given)."""
    # Only folders below where the file and the scan meet count: a checkout may itself live in `build/`.
    try:
        meet = os.path.commonpath([path, str(root)])
        below = Path(os.path.relpath(path, meet)).parts
    except ValueError:  # pragma: no cover - another drive
        meet, below = None, Path(path).parts
    if any(_skipped_dir_name(part) for part in below[:-1]) or Path(path).suffix not in SCANNED_SUFFIXES:
        return False
    if gitignore is not None and meet is not None and gitignore.ignored_below(path, meet):
        return False
    return not is_excluded(Path(path), root, exclude)


def _is_virtualenv(path: Path) -> bool:
    return (path / "pyvenv.cfg").is_file() or (path / "conda-meta").is_dir()


def discover(paths: Iterable[Path], root: Path, exclude: Sequence[str] = (),
             gitignore: Optional[GitIgnore] = None) -> Discovery:
    """The files under `paths`; `gitignore` (when given) skips what git ignores inside folders.
    A path given by name is always scanned, as in ruff (pre-commit passes staged files)."""
    found = Discovery()
    seen_files: set[Path] = set()
    for given in paths:
        if not os.path.lexists(given):
            found.errors.append((given, "no such file or directory"))
        elif given.is_dir():
            _walk(given, _Filter(root, exclude, gitignore), found, seen_files, {_dir_key(given)})
        elif given.is_symlink() and _broken_link(str(given)):
            found.skipped.append((given, _broken_link(str(given))))
        else:
            # A file named explicitly is scanned whatever its suffix is (pre-commit passes files).
            if given.suffix in SCANNED_SUFFIXES + CONFIG_SUFFIXES or not given.suffix:
                _add(given, found, seen_files)
    found.files.sort()
    return found


def _broken_link(path: str) -> str:
    try:
        os.stat(path)
    except OSError as exc:
        return "symbolic link loop" if exc.errno == errno.ELOOP else "broken symbolic link"
    return ""


def _dir_key(path: Path) -> tuple[int, int]:
    st = path.stat()
    return (st.st_dev, st.st_ino)


def _add(path: Path, found: Discovery, seen: set[Path]) -> None:
    if path not in seen:
        seen.add(path)
        found.files.append(path)


@dataclass(frozen=True)
class _Filter:
    root: Path
    exclude: Sequence[str]
    gitignore: Optional[GitIgnore]

    def skips(self, path: Path, is_dir: bool) -> bool:
        if is_excluded(path, self.root, self.exclude):
            return True
        return self.gitignore is not None and self.gitignore.ignored(path, is_dir)


def _walk(folder: Path, skip: _Filter, found: Discovery, seen, ancestors: set) -> None:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        found.errors.append((folder, f"cannot list folder: {exc.strerror or exc}"))
        return
    for entry in entries:
        path = Path(entry.path)
        try:
            is_dir = entry.is_dir()  # follows symlinks
        except OSError:
            is_dir = False
        if skip.skips(path, is_dir):
            continue
        if entry.is_symlink():
            problem = _broken_link(entry.path)
            if problem:
                found.skipped.append((path, problem))
                continue
        if is_dir:
            if _skipped_dir_name(entry.name) or _is_virtualenv(path):
                continue
            try:
                key = _dir_key(path)
            except OSError as exc:
                found.errors.append((path, f"cannot read folder: {exc.strerror or exc}"))
                continue
            if key in ancestors:
                found.skipped.append((path, "symbolic link loop"))
                continue
            _walk(path, skip, found, seen, ancestors | {key})
        elif path.suffix in SCANNED_SUFFIXES or (path.suffix in CONFIG_SUFFIXES and (
                "config" in path.name.lower() or path.suffix != ".json")):  # YAML: a cheap text test decides
            _add(path, found, seen)
