"""Shared shapes of rules, so each rule module states only its domain facts and examples."""

from __future__ import annotations

from typing import ClassVar, Optional

from acclint.linter.context import ProgramContext
from acclint.linter.edits import Fix, InsertStatement, SetArgument, unsafe_fix
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
                         severity: Optional[str] = None, autofix: Optional[Fix] = None) -> None:
        if source.step is not None:
            ctx.report(self, source.step.file, source.step.fact.node, message, fix=fix, severity=severity,
                       autofix=autofix)
        elif source.shell_span is not None:
            ctx.report_shell(self, source.shell_span, message, fix=fix, severity=severity)

    def report_program(self, ctx: ProgramContext, message: str, fix: Optional[str],
                       severity: Optional[str] = None, autofix: Optional[Fix] = None) -> None:
        program = ctx.program
        ctx.report(self, program.entry, program.anchor(), message, fix=fix, severity=severity, autofix=autofix)


def at_entry_start(ctx: ProgramContext, code: str, *imports: str) -> InsertStatement:
    """A statement first in the entry's `if __name__ == "__main__":` block (where `report_program`
    reports), else before the statement it reports at."""
    return InsertStatement(code=code, imports=imports, into_body=ctx.program.entry.main_guard is not None)


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

    # Calls that switch the effect, and the argument that switches it on: name -> (keyword, position, code).
    switch_on: ClassVar[dict] = {}
    # The statement (and its imports) that switches it on at the start of the entry point; None = no autofix.
    switch_on_statement: ClassVar[Optional[tuple]] = None

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        if self.effect in facts.effects or not self.required(ctx, facts):
            return
        off = facts.effects_off.get(self.effect)
        if off is not None:
            self.report_at_source(ctx, off, self.off_message(off), self.fix_text(), autofix=self._switch_on(off))
        else:
            statement = self.switch_on_statement
            autofix = (unsafe_fix(f"add {statement[0]}", at_entry_start(ctx, *statement))
                       if statement else None)
            self.report_program(ctx, self.missing_message(ctx, facts), self.fix_text(), autofix=autofix)

    def _switch_on(self, off: Source) -> Optional[Fix]:
        names = getattr(off.step.fact, "names", ()) if off.step is not None else ()
        for name in sorted(names):
            if name in self.switch_on:
                keyword, position, code = self.switch_on[name]
                # Unsafe: someone switched it off on purpose (speed, or an op without a deterministic kernel).
                return unsafe_fix(f"switch {self.effect} on", SetArgument(keyword=keyword, position=position, code=code))
        return None
