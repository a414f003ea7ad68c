"""`acclint scan -` (with `--stdin-filename NAME`): the text comes from stdin, as editors send an
unsaved buffer. It is reported under NAME, and its program's context (the modules it imports, the
launch scripts beside it) is read from NAME's folder when that exists, as if the file were there."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Optional

STDIN_PATH = "-"


@dataclass(frozen=True)
class StdinFile:
    name: Path  # where the text would live: NAME, or `-` in the current folder
    data: bytes

    def root(self) -> Optional[Path]:
        """The folder the text's context is read from, when it exists."""
        folder = Path(os.path.abspath(self.name)).parent
        return folder if folder.is_dir() else None


def wants_stdin(paths, stdin_filename: Optional[str]) -> bool:
    """ruff's convention: `-` as the only path, or no path and --stdin-filename."""
    return tuple(map(str, paths)) == (STDIN_PATH,) or (not paths and stdin_filename is not None)


def stdin_usage_problem(paths, stdin_filename: Optional[str]) -> Optional[str]:
    """What is wrong with combining stdin and paths, or None."""
    names = [str(p) for p in paths]
    if STDIN_PATH in names and len(names) > 1:
        return "`-` (read stdin) cannot be combined with other paths"
    if stdin_filename is not None and names and names != [STDIN_PATH]:
        return "--stdin-filename names the text read from stdin: give `-` or no path"
    return None


def read_stdin(stream: BinaryIO, stdin_filename: Optional[str]) -> StdinFile:
    return StdinFile(Path(stdin_filename or STDIN_PATH), stream.read())
