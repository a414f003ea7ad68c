"""Shared shapes of rules, so each rule module states only its domain facts and examples."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Iterator, Optional

from acclint.linter.context import FileContext, ProgramContext
from acclint.linter.facts import FileFacts
from acclint.linter.project import Step
from acclint.linter.rulebase import Rule
from acclint.rules.program_facts import ProgramFacts, Source, determinism_setting, program_facts


def where(step: Step) -> str:
    return f"{step.file.path}:{step.file.spans[step.fact.node].line}"


@dataclass(frozen=True)
class Written:
    """Something written explicitly at one node of a file, and what to say about it."""

    node: int
    message: str
    fix: Optional[str] = None
    severity: Optional[str] = None


class ExplicitRule(Rule):
    """A rule about something written explicitly (`cudnn.benchmark = True`, a switch turned off, a
    fused call): reported at its line in every scanned file, entry point or not, reached or not,
    given alone or not. Subclasses yield what they find in one file's facts from `written`.

    The engine lets such a per-file finding stand for any program finding of the same rule on the
    same line, so a rule that also judges programs never reports that line twice."""

    def written(self, facts: FileFacts) -> Iterator[Written]:
        raise NotImplementedError

    def check_file(self, ctx: FileContext) -> None:
        for found in self.written(ctx.facts):
            ctx.report(self, found.node, found.message, fix=found.fix, severity=found.severity)


class ProgramRule(Rule):
    """A rule about a whole training program. `frameworks` limits it to programs importing one."""

    frameworks: ClassVar[tuple] = ()  # top-level packages; empty = any program

    def check_program(self, ctx: ProgramContext) -> None:
        facts = program_facts(ctx)
        if self.frameworks and not facts.imports & set(self.frameworks):
            return
        self.check(ctx, facts)

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        raise NotImplementedError

    def report_at_source(self, ctx: ProgramContext, source: Source, message: str, fix: Optional[str],
                         severity: Optional[str] = None) -> None:
        if source.step is not None:
            ctx.report(self, source.step.file, source.step.fact.node, message, fix=fix, severity=severity)
        elif source.shell_span is not None:
            ctx.report_shell(self, source.shell_span, message, fix=fix, severity=severity)

    def report_program(self, ctx: ProgramContext, message: str, fix: Optional[str],
                       severity: Optional[str] = None) -> None:
        program = ctx.program
        ctx.report(self, program.entry, program.anchor(), message, fix=fix, severity=severity)


class EffectRule(ExplicitRule, ProgramRule):
    """A determinism setting that a program must have on. Switching it off is written explicitly,
    so it is reported where it is written, in any file; a program that never sets it is reported
    at its entry point. Subclasses decide when it is required."""

    effect: ClassVar[str]
    off_consequence: ClassVar[str]  # what switching it off does, for the message

    def required(self, ctx: ProgramContext, facts: ProgramFacts) -> bool:
        return True

    def missing_message(self, ctx: ProgramContext, facts: ProgramFacts) -> str:
        raise NotImplementedError

    def off_message(self, what: str) -> str:
        return f"`{what}` switches {self.effect.replace('-', ' ')} off: {self.off_consequence}"

    def fix_text(self) -> str:
        raise NotImplementedError

    def written(self, facts: FileFacts) -> Iterator[Written]:
        for group in (facts.calls, facts.assignments):
            for fact in group:
                setting = determinism_setting(fact)
                if setting is not None and setting[0] == self.effect and not setting[1]:
                    yield Written(fact.node, self.off_message(setting[2]), self.fix_text())

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        if self.effect in facts.effects or not self.required(ctx, facts):
            return
        off = facts.effects_off.get(self.effect)
        if off is None:
            self.report_program(ctx, self.missing_message(ctx, facts), self.fix_text())
        elif off.step is None:  # switched off in a launch script; Python lines report themselves
            self.report_at_source(ctx, off, self.off_message(off.describe()), self.fix_text())
