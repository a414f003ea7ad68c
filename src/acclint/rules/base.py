"""Shared shapes of rules, so each rule module states only its domain facts and examples."""

from __future__ import annotations

from typing import ClassVar, Optional

from acclint.linter.context import ProgramContext
from acclint.linter.project import Step
from acclint.linter.rulebase import Rule
from acclint.rules.program_facts import ProgramFacts, Source, program_facts


def where(step: Step) -> str:
    return f"{step.file.path}:{step.file.spans[step.fact.node].line}"


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


class EffectRule(ProgramRule):
    """A determinism setting that a program must have on; reported where it is switched off, or
    at the entry point when it is never set. Subclasses decide when it is required."""

    effect: ClassVar[str]

    def required(self, ctx: ProgramContext, facts: ProgramFacts) -> bool:
        return True

    def missing_message(self, ctx: ProgramContext, facts: ProgramFacts) -> str:
        raise NotImplementedError

    def off_message(self, source: Source) -> str:
        return f"{source.describe()} switches this off. " + self.doc.what.split(". ")[0] + "."

    def fix_text(self) -> str:
        raise NotImplementedError

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        if self.effect in facts.effects or not self.required(ctx, facts):
            return
        off = facts.effects_off.get(self.effect)
        if off is not None:
            self.report_at_source(ctx, off, self.off_message(off), self.fix_text())
        else:
            self.report_program(ctx, self.missing_message(ctx, facts), self.fix_text())
