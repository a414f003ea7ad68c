"""Launch commands a project's Markdown documents for its training scripts.

A training script with no launch script beside it is started the way its README or its docs say
(`python main.py -a resnet18 /data`, `accelerate launch examples/x.py --config_name ...`). Those
commands are what a user of the repository runs, so they say which flags a run passes as well as a
launch script would. They are read from fenced shell blocks only, with the same shell reader as
launch scripts, and only to learn how a program starts: they are never judged as launch scripts.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Callable, Optional

from acclint.linter.shell.model import LaunchCommand, ShellReadError
from acclint.linter.shell.reader import read_shell_script

# ```bash, ```console, or a bare ``` fence: what READMEs write commands in.
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})\s*([\w+.-]*)")
_SHELL_LANGUAGES = frozenset({"", "bash", "sh", "shell", "console", "zsh", "shell-session", "bash-session"})
_PROMPT = re.compile(r"^(\s*)\$ ")  # `$ python train.py` in a console block
# `--cache_dir <CACHE_DIR>`: a placeholder for the reader to fill in, not a shell redirection (which
# would cut the argument list there).
_PLACEHOLDER = re.compile(r"<([A-Za-z_][\w./-]*)>")
# Bounds: documentation is context, never worth minutes or memory on a huge repository.
_MAX_MARKDOWN_BYTES = 1_000_000
_MAX_MARKDOWN_FILES = 5_000
_MAX_TOTAL_BYTES = 20_000_000  # per project folder, whatever the files' sizes
_SKIPPED_FOLDERS = frozenset({"node_modules", "site-packages", "__pycache__"})


@dataclass(frozen=True)
class DocumentedLaunch:
    path: str  # the Markdown file (absolute)
    line: int  # the command's line in it
    launch: LaunchCommand


@dataclass(frozen=True)
class _Block:
    path: str
    first_line: int  # line of the block's first command line
    text: str


class Documentation:
    """The shell blocks of the Markdown files under a project folder, read once per folder."""

    def __init__(self) -> None:
        self._blocks: dict = {}  # top folder -> [_Block]
        self._parsed: dict = {}  # (path, first_line) -> [LaunchCommand]

    def launches(self, entry: str, top: str, folders_of: Callable[[str], list]) -> list:
        """The documented commands under `top` that run the script `entry` (absolute paths). A
        command's script is resolved from the Markdown file's folder and the folders above it up to
        the project root (`folders_of`), as a launch script's would be."""
        name = os.path.basename(entry)
        found = []
        for block in self._blocks_under(top):
            if name not in block.text:
                continue
            folders = folders_of(block.path)
            for launch in self._parse(block):
                if _runs(launch, entry, folders):
                    found.append(DocumentedLaunch(block.path, block.first_line + launch.span.line - 1, launch))
        return found

    def _blocks_under(self, top: str) -> list:
        if top not in self._blocks:
            blocks, budget = [], _MAX_TOTAL_BYTES
            for path in _markdown_files(top):
                text = _read(path, budget)
                if text is not None:
                    budget -= len(text)
                    blocks.extend(_shell_blocks(path, text))
            self._blocks[top] = blocks
        return self._blocks[top]

    def _parse(self, block: _Block) -> list:
        key = (block.path, block.first_line)
        if key not in self._parsed:
            try:
                self._parsed[key] = read_shell_script(block.path, block.text).launches
            except ShellReadError:
                self._parsed[key] = []
        return self._parsed[key]


def _runs(launch: LaunchCommand, entry: str, folders: list) -> bool:
    script = (launch.script or "").replace("\\", "/")
    if not script.endswith(".py"):
        return False
    if os.path.isabs(script):
        return os.path.normpath(script) == entry
    return any(os.path.normpath(os.path.join(folder, script)) == entry for folder in folders)


def _markdown_files(top: str) -> list:
    found = []
    for folder, subfolders, names in os.walk(top):
        subfolders[:] = sorted(s for s in subfolders if not s.startswith(".") and s not in _SKIPPED_FOLDERS)
        found.extend(os.path.join(folder, n) for n in sorted(names) if n.lower().endswith(".md"))
        if len(found) >= _MAX_MARKDOWN_FILES:
            return found[:_MAX_MARKDOWN_FILES]
    return found


def _shell_blocks(path: str, text: str) -> list:
    blocks, fence, start, lines = [], None, 0, []
    for number, line in enumerate(text.splitlines(), 1):
        match = _FENCE.match(line)
        if fence is None:
            if match:
                fence, start, lines = (match.group(1), match.group(2).lower()), number + 1, []
        elif match and match.group(1).startswith(fence[0]) and not match.group(2):
            if fence[1] in _SHELL_LANGUAGES:
                blocks.append(_Block(path, start, "\n".join(lines) + "\n"))
            fence = None
        else:
            lines.append(_PLACEHOLDER.sub(r"\1", _PROMPT.sub(r"\1", line)))
    return blocks


def _read(path: str, budget: int) -> Optional[str]:
    """The file's text; None when it is over the per-file limit or the folder's remaining budget."""
    try:
        if os.path.getsize(path) > min(_MAX_MARKDOWN_BYTES, budget):
            return None
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def display_beside(file, path: str) -> str:
    """`path` (absolute) as the scan shows paths: relative to where `file`'s display path starts."""
    shown = os.path.join(os.path.dirname(file.path), os.path.relpath(path, os.path.dirname(file.abspath)))
    return os.path.normpath(shown).replace(os.sep, "/")
