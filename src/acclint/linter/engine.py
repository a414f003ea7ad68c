"""A scan from paths to a ScanResult: discover, analyse files in parallel, check programs, filter."""

from __future__ import annotations

import gc
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Optional, Sequence

from acclint.config import Config, apply_to_finding
from acclint.findings import FileError, ScanResult, Skipped
from acclint.linter.analyze import FileOutcome, analyze_file
from acclint.linter.context import ProgramContext, Sink
from acclint.linter.discovery import discover
from acclint.linter.facts import FileFacts
from acclint.linter.project import Project, ShellFacts
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
    """`cache`: a linter.cache.Cache, or None to analyse every file afresh.
    `progress`: an acclint.progress display (phase/advance), or None."""
    progress = progress or NoProgress()
    cwd = (cwd or Path.cwd()).resolve()
    paths = [Path(p) for p in paths]
    roots = [Path(os.path.abspath(p)) if p.is_dir() else Path(os.path.abspath(p)).parent for p in paths if p.exists()]
    found = discover(paths, roots[0] if roots else cwd, config.exclude)
    result = ScanResult()
    result.errors.extend(FileError(display_path(p, cwd), m) for p, m in found.errors)
    result.skipped.extend(Skipped(display_path(p, cwd), r) for p, r in found.skipped)

    jobs_list = [(os.path.abspath(p), display_path(p, cwd)) for p in found.files]
    progress.phase("analysing files", len(jobs_list))

    def analyse(batch: list) -> list:
        return _run(batch, rules, jobs or default_jobs(), progress.advance)

    outcomes = cache.run(jobs_list, analyse, progress.advance) if cache is not None else analyse(jobs_list)

    sink = Sink()
    python_facts, shell_facts = [], []
    for outcome in outcomes:
        if outcome.error is not None:
            result.errors.append(FileError(outcome.path, outcome.error))
        elif outcome.skip is not None:
            result.skipped.append(Skipped(outcome.path, outcome.skip))
        else:
            result.files_scanned += 1
            sink.findings.extend(outcome.findings)
            (python_facts if isinstance(outcome.facts, FileFacts) else shell_facts).append(outcome.facts)

    check_programs(Project(python_facts, shell_facts, [str(r) for r in roots]), rules, sink, progress)
    result.findings = _filter(sink, config)
    return result


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


def _filter(sink: Sink, config: Config) -> list:
    out, seen = [], set()
    for finding, table in sink.findings:
        if is_suppressed(table, finding.rule, finding.line, finding.end_line):
            continue
        finding = apply_to_finding(config, finding)
        if finding is None:
            continue
        key = (finding.rule, finding.path, finding.line, finding.column, finding.message)
        if key not in seen:  # two entry points may reach the same helper
            seen.add(key)
            out.append(finding)
    out.sort(key=lambda f: f.sort_key())
    return out
