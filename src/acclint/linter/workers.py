"""Per-file analysis, in this process or in a pool of worker processes (the machine has 2
cores; a user's may have 64)."""

from __future__ import annotations

import os
from pathlib import Path

from acclint.linter.collector import COLLECT_EVERY, collect, gc_paused
from acclint.linter.limits import Limits
from acclint.linter.pool import OneProcess, Pool, file_size

# Below this many files a process pool costs more than it saves.
PARALLEL_THRESHOLD = 16


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


def analyse_files(jobs_list: list, rules: list, jobs: int, advance=lambda count=1: None,
                  limits: Limits = Limits()) -> list:
    """Outcomes of `jobs_list` ((abspath, display) pairs), in its order."""
    with gc_paused():
        if jobs <= 1 or len(jobs_list) < PARALLEL_THRESHOLD:
            outcomes = []
            with OneProcess(rules, limits) as analyse:
                for number, job in enumerate(jobs_list, start=1):
                    outcomes.append(analyse(job))
                    advance()
                    if number % COLLECT_EVERY == 0:
                        collect()
            return outcomes
        # Largest files first: sizes vary by 1000x and neighbours cluster. The outcomes go back in the
        # order of `jobs_list`: callers pair them with their jobs (the cache stores each under its job's path).
        outcomes = [None] * len(jobs_list)
        with Pool(rules, limits, jobs) as pool:
            for index in sorted(range(len(jobs_list)), key=lambda i: -file_size(jobs_list[i][0])):
                pool.submit(jobs_list[index], index)
            for _ in jobs_list:
                index, outcome = pool.next_done()
                outcomes[index] = outcome
                advance()
        return outcomes
