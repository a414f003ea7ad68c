"""Write a small project for a test: files dedented, under a folder marked as a project root."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write(root: Path, files: dict) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    # A project root, so that launch scripts and entries are judged within it, not by the temp folder above.
    (root / "pyproject.toml").write_text("", encoding="utf-8")
    return root
