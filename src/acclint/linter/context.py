"""What a rule gets to look at, and how it reports. Findings get their positions from the facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from acclint.findings import Finding, Location, Premise
from acclint.linter.roles import path_role

if TYPE_CHECKING:  # pragma: no cover
    from acclint.linter.edits import Fix
    from acclint.linter.facts import FileFacts
    from acclint.linter.project import Program, Project
    from acclint.linter.rulebase import Rule
    from acclint.linter.shell import Span


def stated_premises(rule: "Rule", premises: tuple = (), rests_on: Optional[tuple] = None) -> tuple:
    """The premises a finding rests on: those the rule proved or disproved itself (`premises`), and
    for the rest of what it rests on (`rests_on`, the rule's declared `premises` by default) an open
    slot that the engine's shared facts fill once every program is known (linter.proof)."""
    stated = {p.premise: p for p in premises}
    names = tuple(rests_on if rests_on is not None else getattr(rule, "premises", ()))
    names += tuple(name for name in stated if name not in names)
    return tuple(stated.get(name) or Premise(name, False, "") for name in names)


def make_finding(rule: "Rule", path: str, where: Location, message: str, fix: Optional[str],
                 severity: Optional[str], autofix: Optional["Fix"] = None, abspath: Optional[str] = None,
                 premises: tuple = (), node: Optional[int] = None) -> Finding:
    return Finding(
        rule=rule.code,
        category=rule.category,
        severity=severity or rule.severity,
        path=path,
        line=where.line,
        column=where.column,
        end_line=where.end_line,
        end_column=where.end_column,
        message=message,
        fix=fix,
        autofix=autofix.bound(abspath or path, where) if autofix is not None else None,
        premises=premises,
        node=node,
    )


@dataclass
class Sink:
    """Collects findings with the suppression table of the file each one lands in, and the entry
    point of the program that found it (None for a per-file finding)."""

    findings: list = field(default_factory=list)  # (Finding, suppressions, program entry path or None)

    def add(self, finding: Finding, suppressions: dict, program: Optional[str] = None) -> None:
        self.findings.append((finding, suppressions, program))


@dataclass
class FileContext:
    facts: "FileFacts"
    sink: Sink

    def report(self, rule: "Rule", node: int, message: str, *, fix: Optional[str] = None,
               severity: Optional[str] = None, autofix: Optional["Fix"] = None, premises: tuple = (),
               rests_on: Optional[tuple] = None) -> None:
        report_at(self.sink, rule, self.facts, node, message, fix, severity, None, autofix,
                  stated_premises(rule, premises, rests_on))


def report_at(sink: Sink, rule: "Rule", facts: "FileFacts", node: int, message: str,
              fix: Optional[str], severity: Optional[str], program: Optional[str],
              autofix: Optional["Fix"] = None, premises: tuple = ()) -> None:
    if facts.role is not None or node in facts.test_nodes:
        return  # test code and packaging are not training (linter.roles)
    where = facts.spans[node] if 0 <= node < len(facts.spans) else Location(1, 1, 1, 1)
    sink.add(make_finding(rule, facts.path, where, message, fix, severity, autofix, facts.abspath, premises,
                          node), facts.suppressions, program)


@dataclass
class ProgramContext:
    program: Optional["Program"]  # None for checks of launch scripts alone
    project: "Project"
    sink: Sink
    cache: dict = field(default_factory=dict)  # per-program derived facts shared between rules
    shared: dict = field(default_factory=dict)  # facts of the entry's flow alone, shared by its runs
    # Where this judgement's findings land: "python" for a program judged from its entry (its
    # launch scripts are judged by their own runs), "shell" for one run of a launch script.
    lands: str = "any"

    def report(self, rule: "Rule", facts: "FileFacts", node: int, message: str, *,
               fix: Optional[str] = None, severity: Optional[str] = None, autofix: Optional["Fix"] = None,
               premises: tuple = (), rests_on: Optional[tuple] = None) -> None:
        if self.lands != "shell":
            report_at(self.sink, rule, facts, node, message, fix, severity, self._entry(), autofix,
                      stated_premises(rule, premises, rests_on))

    def _entry(self) -> Optional[str]:
        return self.program.entry.path if self.program is not None else None

    def report_shell(self, rule: "Rule", span: "Span", message: str, *, fix: Optional[str] = None,
                     severity: Optional[str] = None, autofix: Optional["Fix"] = None, premises: tuple = (),
                     rests_on: Optional[tuple] = None) -> None:
        if self.lands == "python":
            return
        shell = self.project.shells.get(span.path)
        path = shell.path if shell else span.path
        if path_role(path) is not None:
            return  # a launch script of a test (linter.roles)
        where = Location(span.line, span.column, span.end_line, span.end_column)
        sink_table = shell.suppressions if shell else {}
        abspath = shell.abspath if shell else span.path
        self.sink.add(make_finding(rule, path, where, message, fix, severity, autofix, abspath,
                                   stated_premises(rule, premises, rests_on)), sink_table, self._entry())
