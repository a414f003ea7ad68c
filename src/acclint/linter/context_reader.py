"""Context: the files a scan was not given but its programs reach (local imports, launch scripts
beside an entry script, scripts a launch script runs). They are analysed without per-file rules
and never reported on.

Files are read as they are found, not in rounds per import depth: each analysed module's imports
are queued at once, so the worker processes stay busy while the import graph unfolds. Cached
outcomes (a Cache keyed without rules) are used where they check out.
"""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path
from typing import Iterator, Optional, Sequence

from acclint.linter.analyze import FileOutcome
from acclint.linter.discovery import kind_of, would_discover
from acclint.linter.facts import FileFacts
from acclint.linter.project import Project, is_entry_candidate, launch_script_folders
from acclint.linter.limits import Limits
from acclint.linter.pool import OneProcess, Pool
from acclint.linter.workers import PARALLEL_THRESHOLD, display_path, gc_paused


class ContextLoader:
    """Reads context files only where a whole-folder scan would read them, each at most once."""

    def __init__(self, cwd: Path, root: Path, exclude: Sequence[str], failed: set, cache=None, gitignore=None,
                 limits: Limits = Limits()):
        self.cwd, self.root, self.exclude = cwd, root, exclude
        self.gitignore = gitignore  # a linter.gitignore.GitIgnore, or None to read ignored files too
        self.limits = limits  # context files are bounded as given ones are
        self.failed = set(failed)  # given files (already analysed), files read or unreadable
        self.cache = cache  # a linter.cache.Cache for rule-less outcomes, or None
        self._available: dict = {}

    def available(self, path: str) -> bool:
        known = self._available.get(path)
        if known is None:
            known = self._available[path] = os.path.isfile(path) and would_discover(path, self.root, self.exclude,
                                                                                     self.gitignore)
        return known and path not in self.failed

    def load(self, path: str) -> Optional[FileFacts]:
        """One module asked for while programs are built (those not read ahead)."""
        (facts,) = self.read([path], 1) or [None]
        return facts

    def read(self, abspaths: list, jobs: int) -> list:
        """The facts of those of `abspaths` that could be read."""
        with _Reader(self, jobs) as reader:
            reader.submit(abspaths)
            return list(reader.completed())


def read_context(project: Project, given_python: list, given_shells: list, loader: ContextLoader, jobs: int) -> None:
    """Add to `project` what the given files' programs reach on disk, transitively."""
    with _Reader(loader, jobs) as reader:
        reader.submit(_beside_entries(project, given_python, loader))
        reader.submit(_launched(project, given_shells, loader))
        reader.submit(project.missing_modules(given_python))
        while True:
            for facts in reader.completed():
                if isinstance(facts, FileFacts):
                    project.add([facts])
                    reader.submit(project.missing_modules([facts]))
                else:
                    project.add((), [facts])
            if not reader.failed_since_check:
                return
            # A module that could not be read leaves its importers to look further, as Python would.
            reader.failed_since_check = 0
            wanted = project.missing_modules(list(project.files.values()))
            if not wanted:
                return
            reader.submit(wanted)


def _beside_entries(project: Project, given_python: list, loader: ContextLoader) -> list:
    """Launch scripts beside a given entry script (and in its zoo-style script folders): they may launch it
    with flags and exports."""
    beside = {}
    for file in given_python:
        if is_entry_candidate(file):
            for folder in launch_script_folders(file.abspath):
                for name in _listdir(folder):
                    path = os.path.join(folder, name)
                    if path not in project.shells and loader.available(path) and kind_of(Path(path)) == "shell":
                        beside[path] = None
    return list(beside)


def _launched(project: Project, given_shells: list, loader: ContextLoader) -> list:
    """The scripts the given launch scripts run."""
    launched = {}
    for shell in given_shells:
        for launch in shell.script.launches:
            for candidate in project.launch_candidates(shell, launch.script):
                if candidate in project.files:
                    break
                if loader.available(candidate):
                    launched[candidate] = None
                    break
    return list(launched)


def _listdir(folder: str) -> list:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


class _Reader:
    """Analyses files as they are submitted: cached ones at once, the first few in this process
    (a pool costs more than it saves on a small program), the rest in worker processes."""

    def __init__(self, loader: ContextLoader, jobs: int):
        self.loader, self.jobs = loader, jobs
        self.ready: deque = deque()  # outcomes not yet handed out
        self.todo: deque = deque()  # (job, digest) not yet started
        self.analysed = 0
        self.failed_since_check = 0
        self.pool = None
        self.here = OneProcess([], loader.limits)

    def __enter__(self) -> "_Reader":
        self._gc = gc_paused()
        self._gc.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.close()
        self.here.__exit__(*exc)
        self._gc.__exit__(*exc)

    def submit(self, paths) -> None:
        cache = self.loader.cache
        for path in paths:
            if path in self.loader.failed:
                continue
            self.loader.failed.add(path)  # read once, whatever the outcome
            job = (path, display_path(Path(path), self.loader.cwd))
            cached, digest = cache.lookup(*job) if cache is not None else (None, None)
            if cached is not None:
                self.ready.append(cached)
            else:
                self.todo.append((job, digest))

    def completed(self) -> Iterator:
        """Facts of submitted files as they are analysed (files submitted meanwhile included)."""
        while self.ready or self.todo or (self.pool is not None and self.pool.pending()):
            if self.ready:
                outcome = self.ready.popleft()
                if outcome.facts is None:
                    self.failed_since_check += 1
                else:
                    yield outcome.facts
            elif self.todo and self._pooled():
                while self.todo:
                    job, digest = self.todo.popleft()
                    self.pool.submit(job, (job, digest))
            elif self.todo:
                job, digest = self.todo.popleft()
                self._done(job, digest, self.here(job))
            else:
                (job, digest), outcome = self.pool.next_done()
                self._done(job, digest, outcome)

    def _pooled(self) -> bool:
        if self.pool is None:
            if self.jobs <= 1 or self.analysed + len(self.todo) < PARALLEL_THRESHOLD:
                return False
            self.pool = Pool([], self.loader.limits, self.jobs)
        return True

    def _done(self, job: tuple, digest: Optional[str], outcome: FileOutcome) -> None:
        self.analysed += 1
        if self.loader.cache is not None and digest is not None:
            self.loader.cache.store(job[0], job[1], digest, outcome)
        self.ready.append(outcome)
