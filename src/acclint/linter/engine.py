"""A scan from paths to a ScanResult: discover, analyse files in parallel, check programs, filter."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Optional, Sequence

from acclint.config import Config, apply_to_finding
from acclint.findings import FileError, ScanResult, Skipped
from acclint.linter.analyze import analyze_file
from acclint.linter.context import ProgramContext, Sink
from acclint.linter.causes import fold_one_run, fold_shared_fixes
from acclint.linter.collector import scan_heap
from acclint.linter.context_reader import ContextLoader, read_context
from acclint.linter.copies import fold_identical_copies
from acclint.linter.discovery import discover
from acclint.linter.facts import FileFacts
from acclint.linter.gitignore import GitIgnore
from acclint.linter.project import Project
from acclint.linter.proof import Prover
from acclint.linter.stdin import StdinFile
from acclint.linter.suppress import is_suppressed
from acclint.linter.workers import analyse_files, default_jobs, display_path
from acclint.progress import NoProgress

__all__ = ["ContextLoader", "check_programs", "default_jobs", "display_path", "read_context", "scan"]


def scan(paths: Sequence[Path], rules: list, config: Config, *, jobs: Optional[int] = None,
         cwd: Optional[Path] = None, cache=None, progress=None, stdin: Optional[StdinFile] = None) -> ScanResult:
    """Findings for the files given (or found under the folders given). Their programs are judged
    whole: local modules they import and launch scripts that run them are read too, for context.
    `cache`: a linter.cache.Cache, or None to analyse every file afresh.
    `progress`: an acclint.progress display (phase/advance), or None.
    `stdin`: text read from stdin, scanned as if it were the file it names (then `paths` is empty)."""
    with scan_heap():  # the facts of every file live until the end: frozen out of collections (collector.py)
        return _scan(paths, rules, config, jobs, cwd, cache, progress, stdin)


def _scan(paths: Sequence[Path], rules: list, config: Config, jobs: Optional[int], cwd: Optional[Path], cache,
          progress, stdin: Optional[StdinFile]) -> ScanResult:
    progress = progress or NoProgress()
    rules = [rule.configured(config) for rule in rules]
    cwd = (cwd or Path.cwd()).resolve()
    paths = [Path(p) for p in paths]
    roots = [Path(os.path.abspath(p)) if p.is_dir() else Path(os.path.abspath(p)).parent for p in paths if p.exists()]
    if stdin is not None and stdin.root() is not None:
        roots.append(stdin.root())
    root = roots[0] if roots else cwd
    gitignore = GitIgnore() if config.respect_gitignore else None
    found = discover(paths, root, config.exclude, gitignore)
    result = ScanResult()
    result.errors.extend(FileError(display_path(p, cwd), m) for p, m in found.errors)
    result.skipped.extend(Skipped(display_path(p, cwd), r) for p, r in found.skipped)

    jobs = jobs or default_jobs()
    limits = config.limits()
    jobs_list = [(os.path.abspath(p), display_path(p, cwd)) for p in found.files]
    progress.phase("analysing files", len(jobs_list))

    def analyse(batch: list) -> list:
        return analyse_files(batch, rules, jobs, progress.advance, limits)

    outcomes = cache.run(jobs_list, analyse, progress.advance) if cache is not None else analyse(jobs_list)
    if stdin is not None:  # its bytes are not on disk: analysed here, never cached
        job = (os.path.abspath(stdin.name), display_path(stdin.name, cwd))
        jobs_list.append(job)
        outcomes.append(analyze_file(*job, rules, limits, data=stdin.data))

    sink = Sink()
    python_facts, shell_facts = [], []
    for outcome in outcomes:
        if outcome.ignored:
            continue
        if outcome.error is not None:
            result.errors.append(FileError(outcome.path, outcome.error, outcome.error_code))
        elif outcome.skip is not None:
            result.skipped.append(Skipped(outcome.path, outcome.skip))
        else:
            result.files_scanned += 1
            sink.findings.extend(outcome.findings)
            if outcome.facts is not None:  # configs contribute findings only
                (python_facts if isinstance(outcome.facts, FileFacts) else shell_facts).append(outcome.facts)

    loader = ContextLoader(cwd, root, config.exclude, failed={abspath for abspath, _ in jobs_list},
                           cache=cache.without_rules() if cache is not None else None, gitignore=gitignore,
                           limits=limits)
    project = Project(python_facts, shell_facts, [str(r) for r in roots], loader=loader)
    read_context(project, python_facts, shell_facts, loader, jobs)
    programs = check_programs(project, rules, sink, progress, shell_facts)
    result.programs = sorted({program.entry.path for program, _ in programs})
    result.launch_scripts = sorted(shell.path for shell in shell_facts if shell.script.launches)
    given = {display for _, display in jobs_list}
    prove(sink, Prover(project, programs, {rule.code: rule for rule in rules}), given)
    on_disk = {display: abspath for abspath, display in jobs_list if stdin is None or display != jobs_list[-1][1]}
    findings = fold_one_run(_filter(sink, config, given, on_disk), project.shells.values())
    findings = fold_shared_fixes(findings, {rule.code: rule for rule in rules})
    result.findings = [stand_on_premises(f, config.preview) for f in findings]
    return result


def prove(sink: Sink, prover: Prover, given: set) -> None:
    """Fill the premises the rules left to the shared facts (linter.proof), for reported files only;
    drop those the facts show to be noise (Prover.is_noise)."""
    completed = ((prover.complete(finding, program) if finding.path in given else finding, table, program)
                 for finding, table, program in sink.findings)
    sink.findings = [entry for entry in completed if entry[0] is not None]


def stand_on_premises(finding, preview: bool):
    """A finding not proven names what could not be proven. In a default run a warning or error
    stands only on proven premises, the rest is advice (info); `--preview` keeps the rule's severity."""
    if finding.proven or not finding.premises:
        return finding
    missing = "; ".join(f"{p.premise}: {p.evidence}" for p in finding.premises if not p.proven)
    severity = finding.severity if preview else "info"
    return replace(finding, severity=severity, message=f"{finding.message.rstrip()} Not proven: {missing}.")


def check_programs(project: Project, rules: list, sink: Sink, progress=None, given_shells=()) -> list:
    """Each training program, judged with the launch scripts beside its entry, reports on Python
    files; each run a given launch script starts reports on that launch script (see
    Project.runs). Either way a file's findings depend on that file and what it reaches on disk,
    never on what else the scan was given. Returns the (program, "python" | "shell") pairs judged."""
    progress = progress or NoProgress()
    progress.phase("following programs")
    programs = [(program, "python") for program in project.programs()]
    programs += [(run, "shell") for run in project.runs(given_shells)]
    progress.phase("checking programs", len(programs))
    shared: dict = {}  # entry abspath -> facts of its flow, the same for the program and its runs
    for program, lands in programs:
        context = ProgramContext(program, project, sink, lands=lands,
                                 shared=shared.setdefault(program.entry.abspath, {}))
        for rule in rules:
            rule.check_program(context)
        progress.advance()
    alone = ProgramContext(None, project, sink)
    for rule in rules:
        check = getattr(rule, "check_shell", None)
        if check is not None:
            for shell in project.shells.values():
                check(alone, shell)
        # A module judged on its own, with the project to follow its imports (a model whose config
        # class is defined in another module); copied, since resolving an import may read a file.
        check = getattr(rule, "check_module", None)
        if check is not None:
            for file in list(project.files.values()):
                check(alone, file)
    return programs


_SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


def _filter(sink: Sink, config: Config, given: set, on_disk: Optional[dict] = None) -> list:
    """Findings in the files given, once per place. A finding that several programs reach (a
    helper, a module-level line) is reported once, saying how many; a per-file finding stands for
    any program finding of the same rule on the same line; byte-identical files are one place
    (linter.copies; `on_disk`: reported path -> file on disk)."""
    per_file, seen = [], set()
    # A place is a line: two calls of one rule on one line (`a.glob(..) + b.glob(..)`) are one finding.
    places: dict = {}  # (rule, path, line) -> (finding, entry points in order)
    for finding, table, program in sink.findings:
        if finding.path not in given or is_suppressed(table, finding.rule, finding.line, finding.end_line):
            continue
        finding = apply_to_finding(config, finding)
        if finding is None:
            continue
        if program is None:
            key = (finding.rule, finding.path, finding.line, finding.message)
            if key not in seen:
                seen.add(key)
                per_file.append(finding)
            continue
        place = places.setdefault((finding.rule, finding.path, finding.line), (finding, {}))
        if finding.proven and not place[0].proven:  # the program that proves it speaks for the place
            place = places[(finding.rule, finding.path, finding.line)] = (finding, place[1])
        place[1][program] = None
    explicit = {(f.rule, f.path, f.line): index for index, f in enumerate(per_file)}
    out = per_file
    for (rule, path, line), (finding, programs) in places.items():
        index = explicit.get((rule, path, line))
        if index is not None:
            # The per-file finding stands, unless the program knows more that makes it graver
            # (a saturation-mode write is an error where the program also needs INF/NaN mode).
            if _SEVERITY_RANK.get(finding.severity, 0) > _SEVERITY_RANK.get(per_file[index].severity, 0):
                per_file[index] = finding
            elif finding.proven and not per_file[index].proven and finding.severity == per_file[index].severity:
                per_file[index] = finding  # the same claim, proven by the program that runs it
            continue
        if len(programs) > 1:
            example = next(iter(programs))
            finding = replace(finding, message=f"{finding.message} (reached by {len(programs)} programs; "
                                               f"shown for the one started by {example})")
        out.append(finding)
    out = fold_identical_copies(out, on_disk or {})
    out.sort(key=lambda f: f.sort_key())
    return out
