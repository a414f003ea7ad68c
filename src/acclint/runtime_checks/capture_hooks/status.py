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
    world_size: int = 1
    logical: bool = False  # one fingerprint merged from every rank, written by rank 0
    ok: bool | None = None
    error: str | None = None
    stopping: bool = False  # the process waits for the job to be ended (also under --continue: a mismatch)
    notes: list[str] = field(default_factory=list)

    def write(self, path: Path) -> None:
        partial = path.with_suffix(".part")  # renamed when complete: the parent never reads half a file
        partial.write_text(json.dumps(asdict(self)), encoding="utf-8")
        partial.replace(path)


def read_all(folder: Path) -> list[Status]:
    found = []
    for path in sorted(folder.glob("*.json")):
        try:
            found.append(Status(**json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError, TypeError):
            continue  # a process killed while writing: it said nothing
    return found


def job_done(statuses: list[Status]) -> bool:
    """Whether the job is to be ended now: a process waits for it, and the capture is over (an
    error anywhere, the merged file written by rank 0 of a torch.distributed job, or every
    rank's own file written by ranks without torch.distributed)."""
    if not any(s.stopping for s in statuses):
        return False
    if any(s.error for s in statuses):
        return True
    captured = [s for s in statuses if s.captured]
    if any(s.logical and s.rank == 0 for s in captured):
        return True
    return bool(captured) and len({s.rank for s in captured if not s.logical}) >= captured[0].world_size


STOP_FILE = "stop"


def request_stop(folder: Path) -> None:
    (folder / STOP_FILE).touch()


def stop_requested(folder: "str | Path") -> bool:
    """The parent asked the waiting processes to end (or is gone, its folder removed)."""
    folder = Path(folder)
    return (folder / STOP_FILE).exists() or not folder.is_dir()
