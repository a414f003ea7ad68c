"""Which paths git ignores: the `.gitignore` files from the repository's root down to a path, and
`.git/info/exclude`, read as gitignore(5) reads them (negation, directory-only and anchored patterns,
`*`, `?`, `[...]`, `**`). Used while walking folders, so generated and vendored files that git
ignores are not scanned (ruff and ripgrep do the same).

As in ruff, only paths inside a git repository are affected; the user's global excludes file
(core.excludesFile) is not read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Pattern:
    regex: "re.Pattern[str]"
    negated: bool  # `!pattern`: re-include what an earlier pattern ignored
    dir_only: bool  # `pattern/`: directories only


def parse_line(line: str) -> Optional[Pattern]:
    """One line of a .gitignore file, or None for a blank line or a comment."""
    line = line.rstrip("\n").rstrip("\r")
    while line.endswith(" ") and not line.endswith("\\ "):  # trailing spaces unless escaped
        line = line[:-1]
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    elif line.startswith("\\!") or line.startswith("\\#"):
        line = line[1:]
    dir_only = line.endswith("/") and not line.endswith("\\/")
    line = line.rstrip("/") if dir_only else line
    if not line:
        return None
    # A slash at the start or in the middle anchors the pattern to the .gitignore's folder.
    anchored = "/" in line
    body = _translate(line.lstrip("/") if anchored else line)
    prefix = "" if anchored else "(?:.*/)?"
    return Pattern(re.compile(prefix + body + r"\Z", re.DOTALL), negated, dir_only)


def _translate(pattern: str) -> str:
    segments = pattern.split("/")
    out = ""
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            if last:  # `dir/**`: everything inside; `**` alone: everything
                out += ".+" if index == 0 else "/.+"
            else:  # `**/x` and `a/**/b`: zero or more folders
                out += "(?:.*/)?" if index == 0 else "/(?:.*/)?"
            continue
        if index > 0 and segments[index - 1] != "**":
            out += "/"
        out += _segment(segment)
    return out


def _segment(segment: str) -> str:
    out, i = "", 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            while i + 1 < len(segment) and segment[i + 1] == "*":  # `**` inside a name is `*`
                i += 1
            out += "[^/]*"
        elif char == "?":
            out += "[^/]"
        elif char == "\\" and i + 1 < len(segment):
            i += 1
            out += re.escape(segment[i])
        elif char == "[":
            end, klass = _bracket(segment, i)
            if klass is None:
                out += re.escape(char)
            else:
                out += klass
                i = end
        else:
            out += re.escape(char)
        i += 1
    return out


def _bracket(segment: str, start: int) -> tuple:
    """(index of the closing `]`, the regex class) for a `[...]` at `start`; (start, None) if unclosed."""
    i = start + 1
    negated = i < len(segment) and segment[i] in "!^"
    if negated:
        i += 1
    first = i
    if i < len(segment) and segment[i] == "]":  # a `]` first is a literal
        i += 1
    while i < len(segment) and segment[i] != "]":
        i += 1
    if i >= len(segment):
        return start, None
    members = "".join(c if c == "-" else re.escape(c) for c in segment[first:i])
    return i, f"[^/{members}]" if negated else f"[{members}]"


def read_patterns(path: str) -> list:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return [p for p in map(parse_line, handle) if p is not None]
    except OSError:
        return []


class GitIgnore:
    """Answers `ignored(path, is_dir)` for paths on disk; each folder's rules are read once."""

    def __init__(self) -> None:
        self._roots: dict = {}  # folder -> its repository root, or None outside a repository
        self._rules: dict = {}  # folder -> [(base folder, patterns)], root first

    def ignored(self, path, is_dir: bool) -> bool:
        """Whether git ignores this entry of its folder. Its parent folders are not tested: a walk
        never enters an ignored folder, and a folder given by name is scanned (as in ruff)."""
        path = os.path.abspath(path)
        parent = os.path.dirname(path)
        return self._root(parent) is not None and self._matches(parent, path, is_dir)

    def ignored_below(self, path, top) -> bool:
        """Whether a walk of `top` would skip the file `path`: it, or a folder between, is ignored."""
        path, top = os.path.abspath(path), os.path.abspath(top)
        if self.ignored(path, False):
            return True
        folder = os.path.dirname(path)
        while folder != top and folder.startswith(top + os.sep):
            if self.ignored(folder, True):
                return True
            folder = os.path.dirname(folder)
        return False

    def _matches(self, folder: str, path: str, is_dir: bool) -> bool:
        """The last pattern that matches decides; deeper files come later, so they win."""
        verdict = False
        for base, patterns in self._chain(folder):
            relative = os.path.relpath(path, base).replace(os.sep, "/")
            for pattern in patterns:
                if (is_dir or not pattern.dir_only) and pattern.regex.match(relative):
                    verdict = not pattern.negated
        return verdict

    def _chain(self, folder: str) -> list:
        chain = self._rules.get(folder)
        if chain is None:
            root = self._root(folder)
            if folder == root:
                chain = [(folder, read_patterns(os.path.join(folder, ".git", "info", "exclude")))]
            else:
                chain = list(self._chain(os.path.dirname(folder)))
            own = read_patterns(os.path.join(folder, ".gitignore"))
            if own:
                chain.append((folder, own))
            self._rules[folder] = chain
        return chain

    def _root(self, folder: str) -> Optional[str]:
        if folder not in self._roots:
            parent = os.path.dirname(folder)
            if os.path.exists(os.path.join(folder, ".git")):  # a folder, or a file in a worktree
                self._roots[folder] = folder
            elif parent == folder:
                self._roots[folder] = None
            else:
                self._roots[folder] = self._root(parent)
        return self._roots[folder]
