"""A scan from paths to a ScanResult: discover, analyse files in parallel, check programs, filter."""

from __future__ import annotations

import gc
import os
from dataclasses import replace
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Optional, Sequence

from acclint.config import Config, apply_to_finding
from acclint.findings import FileError, ScanResult, Skipped
from acclint.linter.analyze import FileOutcome, analyze_file
from acclint.linter.context import ProgramContext, Sink
from acclint.linter.discovery import discover, kind_of, would_discover
from acclint.linter.facts import FileFacts
from acclint.linter.project import Project, is_entry_candidate
from acclint.linter.suppress import is_suppressed
from acclint.progress import NoProgress

# Below this many files a process pool costs more than it saves.
_PARALLEL_THRESHOLD = 16
_worker_rules: list = []


_COLLECT_EVERY = 256  # files between manual collections while automatic GC is off
_worker_count = 0


def _init_worker(rules: list) -> None:
    global _worker_rules
    _worker_rules = rules
    gc.disable()


def _analyze_in_worker(job: tuple) -> FileOutcome:
    global _worker_count
    _worker_count += 1
    if _worker_count % _COLLECT_EVERY == 0:
        gc.collect()
    return analyze_file(job[0], job[1], _worker_rules)


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


def scan(paths: Sequence[Path], rules: list, config: Config, *, jobs: Optional[int] = None,
         cwd: Optional[Path] = None, cache=None, progress=None) -> ScanResult:
    """Findings for the files given (or found under the folders given). Their programs are judged
    whole: local modules they import and launch scripts that run them are read too, for context.
    `cache`: a linter.cache.Cache, or None to analyse every file afresh.
    `progress`: an acclint.progress display (phase/advance), or None."""
    progress = progress or NoProgress()
    cwd = (cwd or Path.cwd()).resolve()
    paths = [Path(p) for p in paths]
    roots = [Path(os.path.abspath(p)) if p.is_dir() else Path(os.path.abspath(p)).parent for p in paths if p.exists()]
    root = roots[0] if roots else cwd
    found = discover(paths, root, config.exclude)
    result = ScanResult()
    result.errors.extend(FileError(display_path(p, cwd), m) for p, m in found.errors)
    result.skipped.extend(Skipped(display_path(p, cwd), r) for p, r in found.skipped)

    jobs = jobs or default_jobs()
    jobs_list = [(os.path.abspath(p), display_path(p, cwd)) for p in found.files]
    progress.phase("analysing files", len(jobs_list))

    def analyse(batch: list) -> list:
        return _run(batch, rules, jobs, progress.advance)

    outcomes = cache.run(jobs_list, analyse, progress.advance) if cache is not None else analyse(jobs_list)

    sink = Sink()
    python_facts, shell_facts = [], []
    for outcome in outcomes:
        if outcome.ignored:
            continue
        if outcome.error is not None:
            result.errors.append(FileError(outcome.path, outcome.error))
        elif outcome.skip is not None:
            result.skipped.append(Skipped(outcome.path, outcome.skip))
        else:
            result.files_scanned += 1
            sink.findings.extend(outcome.findings)
            if outcome.facts is not None:  # configs contribute findings only
                (python_facts if isinstance(outcome.facts, FileFacts) else shell_facts).append(outcome.facts)

    loader = ContextLoader(cwd, root, config.exclude, failed={abspath for abspath, _ in jobs_list})
    project = Project(python_facts, shell_facts, [str(r) for r in roots], loader=loader)
    read_context(project, python_facts, shell_facts, loader, jobs)
    check_programs(project, rules, sink, progress)
    result.findings = _filter(sink, config, given={display for _, display in jobs_list})
    return result


class ContextLoader:
    """Reads files the scan was not given but its programs reach (for context, never reported):
    only where a whole-folder scan would read them, each at most once, without per-file rules."""

    def __init__(self, cwd: Path, root: Path, exclude: Sequence[str], failed: set):
        self.cwd, self.root, self.exclude = cwd, root, exclude
        self.failed = set(failed)  # given files (already analysed) and files that cannot be read
        self._available: dict = {}

    def available(self, path: str) -> bool:
        known = self._available.get(path)
        if known is None:
            known = self._available[path] = os.path.isfile(path) and would_discover(path, self.root, self.exclude)
        return known and path not in self.failed

    def load(self, path: str) -> Optional[FileFacts]:
        """One module asked for while programs are built (those not read ahead)."""
        (facts,) = self.read([path], 1) or [None]
        return facts

    def read(self, abspaths: list, jobs: int) -> list:
        """Analyse files for context, in parallel; the facts of those that could be read."""
        outcomes = _run([(p, display_path(Path(p), self.cwd)) for p in abspaths], [], jobs)
        self.failed.update(abspaths)  # read once, whatever the outcome
        return [o.facts for o in outcomes if o.facts is not None]


def read_context(project: Project, given_python: list, given_shells: list, loader: ContextLoader, jobs: int) -> None:
    """Add to `project` what the given files' programs reach on disk: the launch scripts beside a
    given entry script, the scripts a given launch script runs, and local imports, transitively."""
    beside = {}
    for file in given_python:
        if is_entry_candidate(file):
            folder = os.path.dirname(file.abspath)
            for name in _listdir(folder):
                path = os.path.join(folder, name)
                if path not in project.shells and loader.available(path) and kind_of(Path(path)) == "shell":
                    beside[path] = None
    launched = {}
    for shell in given_shells:
        for launch in shell.script.launches:
            for candidate in project.launch_candidates(shell, launch.script):
                if candidate in project.files:
                    break
                if loader.available(candidate):
                    launched[candidate] = None
                    break
    first = loader.read([*beside, *launched], jobs)
    project.add([f for f in first if isinstance(f, FileFacts)], [f for f in first if not isinstance(f, FileFacts)])
    new = given_python + [f for f in first if isinstance(f, FileFacts)]
    while new:
        wanted = project.missing_modules(new)
        if not wanted:
            break
        read = loader.read(wanted, jobs)
        project.add(read)
        # A module that could not be read leaves its importers to look further, as Python would.
        new = read if len(read) == len(wanted) else list(project.files.values())


def _listdir(folder: str) -> list:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def check_programs(project: Project, rules: list, sink: Sink, progress=None) -> None:
    progress = progress or NoProgress()
    progress.phase("following programs")
    programs = project.programs()
    progress.phase("checking programs", len(programs))
    for program in programs:
        context = ProgramContext(program, project, sink)
        for rule in rules:
            rule.check_program(context)
        progress.advance()
    shells_only = ProgramContext(None, project, sink)
    for rule in rules:
        check = getattr(rule, "check_shell", None)
        if check is not None:
            for shell in project.shells.values():
                check(shells_only, shell)


def _run(jobs_list: list, rules: list, jobs: int, advance=lambda count=1: None) -> list:
    # Facts are long-lived and free of cycles: automatic full collections would re-walk all of
    # them again and again (a quarter of the scan's CPU), so collect by hand instead.
    enabled = gc.isenabled()
    gc.disable()
    try:
        if jobs <= 1 or len(jobs_list) < _PARALLEL_THRESHOLD:
            outcomes = []
            for number, (abspath, display) in enumerate(jobs_list, start=1):
                outcomes.append(analyze_file(abspath, display, rules))
                advance()
                if number % _COLLECT_EVERY == 0:
                    gc.collect()
            return outcomes
        # Largest files first, one at a time: sizes vary by 1000x and neighbours cluster.
        ordered = sorted(jobs_list, key=lambda job: -_size(job[0]))
        with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(rules,)) as pool:
            outcomes = []
            for outcome in pool.map(_analyze_in_worker, ordered, chunksize=1):
                outcomes.append(outcome)
                advance()
            return outcomes
    finally:
        if enabled:
            gc.enable()


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


_SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


def _filter(sink: Sink, config: Config, given: set) -> list:
    """Findings in the files given, once per place. A finding that several programs reach (a
    helper, a module-level line) is reported once, saying how many; a per-file finding stands for
    any program finding of the same rule on the same line."""
    per_file, seen = [], set()
    places: dict = {}  # (rule, path, line, column) -> (finding, entry points in order)
    for finding, table, program in sink.findings:
        if finding.path not in given or is_suppressed(table, finding.rule, finding.line, finding.end_line):
            continue
        finding = apply_to_finding(config, finding)
        if finding is None:
            continue
        if program is None:
            key = (finding.rule, finding.path, finding.line, finding.column, finding.message)
            if key not in seen:
                seen.add(key)
                per_file.append(finding)
            continue
        place = places.setdefault((finding.rule, finding.path, finding.line, finding.column), (finding, {}))
        place[1][program] = None
    explicit = {(f.rule, f.path, f.line): index for index, f in enumerate(per_file)}
    out = per_file
    for (rule, path, line, _), (finding, programs) in places.items():
        index = explicit.get((rule, path, line))
        if index is not None:
            # The per-file finding stands, unless the program knows more that makes it graver
            # (a saturation-mode write is an error where the program also needs INF/NaN mode).
            if _SEVERITY_RANK.get(finding.severity, 0) > _SEVERITY_RANK.get(per_file[index].severity, 0):
                per_file[index] = finding
            continue
        if len(programs) > 1:
            example = next(iter(programs))
            finding = replace(finding, message=f"{finding.message} (reached by {len(programs)} programs; "
                                               f"shown for the one started by {example})")
        out.append(finding)
    out.sort(key=lambda f: f.sort_key())
    return out
