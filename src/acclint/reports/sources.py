"""Source lines of reported files, read once per file, split the way the engine counts lines.

Shared by the reporters that quote source (SARIF fingerprints, the HTML report's snippets).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional, Union

# Python and the engine count lines on these breaks only (not str.splitlines' \f, \x1c, ...).
LINE_BREAK = re.compile(r"\r\n|\r|\n")


class SourceCache:
    """`lines(path)`: the file's lines (None when unreadable); relative paths resolve against `base_dir`."""

    def __init__(self, base_dir: Union[str, Path, None] = None):
        self._base = Path(base_dir) if base_dir is not None else None
        self._lines: dict[str, Optional[list[str]]] = {}

    def lines(self, path: str) -> Optional[list[str]]:
        if path not in self._lines:
            file = Path(path)
            if self._base is not None and not file.is_absolute():
                file = self._base / file
            try:
                text = file.read_text(encoding="utf-8", errors="replace")
            except OSError:
                self._lines[path] = None
            else:
                self._lines[path] = LINE_BREAK.split(text)
        return self._lines[path]
