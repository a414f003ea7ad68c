"""Each process's final word to `acclint capture`: one small JSON file per process, written once.

`captured` (the fingerprint is written; `ok` is the parity with --reference, None without one),
`error` (recording failed: the message), or at exit what the process got to (`torch` imported,
`optimizers` made, `steps` begun) so the parent can say why no step was seen.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class Status:
    pid: int
    framework: str | None = None
    optimizers: int = 0
    captured: bool = False
    rank: int = 0
    ok: bool | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self)), encoding="utf-8")


def read_all(folder: Path) -> list[Status]:
    found = []
    for path in sorted(folder.glob("*.json")):
        try:
            found.append(Status(**json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError, TypeError):
            continue  # a process killed while writing: it said nothing
    return found
