"""Per-file analysis, in this process or in a pool of worker processes (the machine has 2
cores; a user's may have 64)."""

from __future__ import annotations

import gc
import os
from contextlib import contextmanager
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from acclint.linter.analyze import FileOutcome, analyze_file

# Below this many files a process pool costs more than it saves.
PARALLEL_THRESHOLD = 16
_worker_rules: list = []


_COLLECT_EVERY = 256  # files between manual collections while automatic GC is off
_worker_count = 0


def _init_worker(rules: list) -> None:
    global _worker_rules
    _worker_rules = rules
    gc.disable()


def analyse_in_worker(job: tuple) -> FileOutcome:
    global _worker_count
    _worker_count += 1
    if _worker_count % _COLLECT_EVERY == 0:
        gc.collect()
    return analyze_file(job[0], job[1], _worker_rules)


def start_pool(rules: list, jobs: int) -> ProcessPoolExecutor:
    """Worker processes that analyse files with `rules` (submit `analyse_in_worker` jobs)."""
    return ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(rules,))


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def display_path(path: Path, cwd: Path) -> str:
    # abspath, not resolve(): a symlink is reported under its own name, and a loop cannot raise.
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(cwd).as_posix()
    except ValueError:
        return absolute.as_posix()


@contextmanager
def gc_paused():
    """Facts are long-lived and free of cycles: automatic full collections would re-walk all of
    them again and again (a quarter of the scan's CPU), so collect by hand instead."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def analyse_files(jobs_list: list, rules: list, jobs: int, advance=lambda count=1: None) -> list:
    """The outcome of each of `jobs_list` ((abspath, display) pairs), in the same order."""
    with gc_paused():
        if jobs <= 1 or len(jobs_list) < PARALLEL_THRESHOLD:
            outcomes = []
            for number, (abspath, display) in enumerate(jobs_list, start=1):
                outcomes.append(analyze_file(abspath, display, rules))
                advance()
                if number % _COLLECT_EVERY == 0:
                    gc.collect()
            return outcomes
        # Largest files first, one at a time: sizes vary by 1000x and neighbours cluster. The
        # outcomes go back in the order of `jobs_list`: callers pair them with their jobs (the
        # cache stores each under its job's path).
        order = sorted(range(len(jobs_list)), key=lambda index: -_size(jobs_list[index][0]))
        outcomes: list = [None] * len(jobs_list)
        with start_pool(rules, jobs) as pool:
            for index, outcome in zip(order, pool.map(analyse_in_worker, [jobs_list[i] for i in order], chunksize=1)):
                outcomes[index] = outcome
                advance()
        return outcomes


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
