"""Where the dump.json files of an msprobe dump are, from whatever folder the user names.

    dump_path/step{N}/rank{R}/dump.json      26.x under torch.distributed (or msrun), and 8.x
    dump_path/step{N}/proc{PID}/dump.json    26.x outside torch.distributed
    dump_path/step{N}/rank/dump.json         8.x outside torch.distributed

The user may name the dump_path, one step folder, one rank / proc folder or the dump.json itself.
A dump_path with several steps is read at its first step (the step-0 comparison acclint makes),
unless `step` names another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from acclint.runtime_checks.dumps.reader import DumpError

DUMP_FILE = "dump.json"
_STEP = re.compile(r"step(\d+)")
_RANK = re.compile(r"(?:rank|proc)(\d*)")


@dataclass
class DumpFiles:
    root: Path  # what the user named
    step: str  # "step0", or "" when the folder names no step
    ranks: dict[str, Path]  # "rank0" / "proc1234" / "rank" -> its dump.json, in rank order
    steps: list[str]  # every step folder found


def is_dump(path: str | Path) -> bool:
    """Whether `path` is an msprobe dump (a dump.json, or a folder holding one where msprobe puts it)."""
    path = Path(path)
    if path.is_file():
        return path.name == DUMP_FILE
    if not path.is_dir():
        return False
    if (path / DUMP_FILE).is_file():
        return True
    return any(_rank_files(path)) or any(_rank_files(step) for step in _steps(path).values())


def _steps(path: Path) -> dict[str, Path]:
    found = [(int(m.group(1)), child) for child in path.iterdir()
             if child.is_dir() and (m := _STEP.fullmatch(child.name))]
    return {child.name: child for _, child in sorted(found)}


def _rank_files(step: Path) -> dict[str, Path]:
    found = [(m.group(1), child) for child in step.iterdir()
             if child.is_dir() and (m := _RANK.fullmatch(child.name)) and (child / DUMP_FILE).is_file()]
    ordered = sorted(found, key=lambda item: (item[1].name.startswith("proc"), int(item[0] or -1), item[1].name))
    return {child.name: child / DUMP_FILE for _, child in ordered}


def locate(path: str | Path, step: int | None = None) -> DumpFiles:
    """The dump.json files to read for `path`. DumpError when it holds none."""
    root = Path(path)
    if not root.exists():
        raise DumpError(f"{root}: no such file or folder")
    if root.is_file():
        return DumpFiles(root, _step_of(root.parent.parent), {_rank_name(root.parent): root}, [])
    if (root / DUMP_FILE).is_file():
        return DumpFiles(root, _step_of(root.parent), {_rank_name(root): root / DUMP_FILE}, [])
    ranks = _rank_files(root)
    if ranks:
        return DumpFiles(root, _step_of(root), ranks, [])
    steps = _steps(root)
    if not steps:
        raise DumpError(f"{root}: no msprobe dump here (expected step*/rank*/dump.json or step*/proc*/dump.json)")
    wanted = f"step{step}" if step is not None else next(iter(steps))
    if wanted not in steps:
        raise DumpError(f"{root}: no {wanted} folder (the dump has {', '.join(steps)})")
    ranks = _rank_files(steps[wanted])
    if not ranks:
        raise DumpError(f"{steps[wanted]}: no rank*/ or proc*/ folder with a dump.json")
    return DumpFiles(root, wanted, ranks, list(steps))


def _step_of(folder: Path) -> str:
    return folder.name if _STEP.fullmatch(folder.name) else ""


def _rank_name(folder: Path) -> str:
    return folder.name if _RANK.fullmatch(folder.name) else "rank0"
