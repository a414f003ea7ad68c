"""Everything done to one file, in a worker process: read, parse once, walk once, run per-file rules."""

from __future__ import annotations

import ast

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import libcst as cst

from acclint.findings import INTERNAL_ERROR, IO_ERROR, SYNTAX_ERROR
from acclint.linter.budget import BudgetExceeded, alarm
from acclint.linter.configs import read_config
from acclint.linter.context import FileContext, Sink
from acclint.linter.discovery import kind_of
from acclint.linter.facts import FileFacts
from acclint.linter.frameworks import applies, file_frameworks
from acclint.linter.limits import Limits
from acclint.linter.positions import node_locations
from acclint.linter.project import ShellFacts
from acclint.linter.roles import file_role, test_nodes
from acclint.linter.source import decode_source, read_source
from acclint.linter.suppress import suppressions
from acclint.linter.walker import FileWalker


@dataclass
class FileOutcome:
    path: str
    facts: Optional[object] = None  # FileFacts or ShellFacts
    error: Optional[str] = None
    error_code: str = IO_ERROR  # with `error`: which kind of failure (findings.ERROR_NAMES)
    skip: Optional[str] = None
    findings: list = field(default_factory=list)  # (Finding, suppressions)
    ignored: bool = False  # a JSON file that is no config acclint knows: neither scanned nor skipped
    transient: bool = False  # depends on the machine's load (the time budget ran out): never cached


def analyze_file(abspath: str, display: str, rules: list, limits: Limits = Limits(),
                 data: Optional[bytes] = None) -> FileOutcome:
    """`limits`: the size and shape a file may have and its time budget (the defaults unless given).
    `data`: the file's bytes when they do not come from disk (stdin), else None."""
    path = Path(abspath)
    kind = kind_of(path)
    python = kind == "python"
    source = (read_source(path, python=python, limits=limits) if data is None
              else decode_source(data, python=python))
    if source.text is None:
        return FileOutcome(display, error=source.error, skip=source.skip)
    if kind == "python":
        skip = limits.shape_skip(source.text, source.size)
        if skip is not None:
            return FileOutcome(display, skip=skip)
    try:
        with alarm(limits.time_budget):
            if kind == "shell":
                return _analyze_shell(abspath, display, source.text)
            if kind == "config":
                return _analyze_config(abspath, display, source.text, rules)
            return _analyze_python(abspath, display, source.text, rules)
    except BudgetExceeded:
        return FileOutcome(display, skip=limits.budget_skip(), transient=True)
    except RecursionError:
        return FileOutcome(display, error="too deeply nested to analyse", error_code=SYNTAX_ERROR)
    except Exception as exc:  # one bad file never stops a scan
        return FileOutcome(display, error=f"internal error while analysing this file: {type(exc).__name__}: {exc}",
                           error_code=INTERNAL_ERROR)


def _analyze_python(abspath: str, display: str, text: str, rules: list) -> FileOutcome:
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        return FileOutcome(display, error=_syntax_error(text, exc), error_code=SYNTAX_ERROR)
    facts = FileFacts(path=display, abspath=abspath, line_count=text.count("\n") + 1)
    walker = FileWalker(module, facts)
    walker.run()
    facts.spans = node_locations(module, walker.nodes)
    facts.suppressions = suppressions(text)
    facts.test_nodes = test_nodes(facts)
    facts.role = file_role(facts)
    sink = Sink()
    context = FileContext(facts, sink)
    frameworks = file_frameworks(facts)
    for rule in rules:
        if applies(rule, frameworks):
            rule.check_file(context)
    return FileOutcome(display, facts=facts, findings=sink.findings)


def _syntax_error(text: str, exc: "cst.ParserSyntaxError") -> str:
    # libcst reports where its parser gave up (often a line late); Python's parser names the line.
    try:
        ast.parse(text)
    except SyntaxError as py_exc:
        column = f", column {py_exc.offset}" if py_exc.offset else ""
        return f"syntax error at line {py_exc.lineno}{column}: {py_exc.msg}"
    except (ValueError, RecursionError, MemoryError):
        pass
    return f"syntax error at line {exc.raw_line}, column {exc.raw_column + 1}: {exc.message}"


def _analyze_config(abspath: str, display: str, text: str, rules: list) -> FileOutcome:
    config, error = read_config(display, abspath, text)
    if config is None:
        return FileOutcome(display, error=error, error_code=SYNTAX_ERROR, ignored=error is None)
    sink = Sink()
    context = FileContext(config.facts, sink)
    for rule in rules:
        rule.check_config(context, config)
    return FileOutcome(display, findings=sink.findings)


def _analyze_shell(abspath: str, display: str, text: str) -> FileOutcome:
    from acclint.linter.shell import ShellReadError, read_shell_script

    try:
        script = read_shell_script(abspath, text)
    except ShellReadError as exc:
        return FileOutcome(display, error=str(exc))
    return FileOutcome(display, facts=ShellFacts(display, abspath, script, suppressions(text)))
