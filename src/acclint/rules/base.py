"""Shared shapes of rules, so each rule module states only its domain facts and examples."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Iterator, Optional

from acclint.findings import Premise
from acclint.linter.context import FileContext, ProgramContext
from acclint.linter.edits import Fix, InsertStatement, SetArgument, unsafe_fix
from acclint.linter.facts import FileFacts
from acclint.linter.frameworks import applies
from acclint.linter.project import Step
from acclint.linter.rulebase import Rule
from acclint.rules.flags import runs_only_when
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
    autofix: Optional[Fix] = None


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
            report_written(ctx, self, found.node, found.message, fix=found.fix, severity=found.severity,
                           autofix=found.autofix)


def report_written(ctx: FileContext, rule: Rule, node: int, message: str, *, fix: Optional[str] = None,
                   severity: Optional[str] = None, autofix: Optional[Fix] = None) -> None:
    """Report a setting written at `node`. Whether a training run executes it is a premise the engine
    proves from the run's configuration (linter.proof, linter.runconfig): written under a branch no run
    takes (a flag off by default, a key no config the run loads sets), it is the opt-in of users who turn
    it on, reported as info that names the key and where its default comes from."""
    rests_on = rule.premises if "executes" in rule.premises else (*rule.premises, "executes")
    ctx.report(rule, node, message, fix=fix, severity=severity, autofix=autofix, rests_on=rests_on)



class ProgramRule(Rule):
    """A rule about a whole training program. `frameworks` limits it to programs importing one."""

    frameworks: ClassVar[tuple] = ()  # top-level packages; empty = any program

    def check_program(self, ctx: ProgramContext) -> None:
        facts = program_facts(ctx)
        if self.frameworks and not facts.imports & set(self.frameworks):
            return
        if not applies(self, facts.frameworks):
            return  # the program trains with another framework (`tensor_framework`)
        self.check(ctx, facts)

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        raise NotImplementedError

    def report_at_source(self, ctx: ProgramContext, source: Source, message: str, fix: Optional[str],
                         severity: Optional[str] = None, autofix: Optional[Fix] = None,
                         rests_on: Optional[tuple] = None) -> None:
        if source.step is not None:
            ctx.report(self, source.step.file, source.step.fact.node, message, fix=fix, severity=severity,
                       autofix=autofix, rests_on=rests_on)
        elif source.shell_span is not None:
            ctx.report_shell(self, source.shell_span, message, fix=fix, severity=severity, rests_on=rests_on)

    def report_program(self, ctx: ProgramContext, message: str, fix: Optional[str],
                       severity: Optional[str] = None, autofix: Optional[Fix] = None, premises: tuple = ()) -> None:
        """A claim about the whole program, shown at its entry: it rests on the program, not on the
        line it is shown at running."""
        program = ctx.program
        ctx.report(self, program.entry, program.anchor(), message, fix=fix, severity=severity, autofix=autofix,
                   premises=premises, rests_on=program_premises(self))

    def report_absence(self, ctx: ProgramContext, facts: ProgramFacts, message: str, fix: Optional[str],
                       severity: Optional[str] = None, autofix: Optional[Fix] = None, premises: tuple = ()) -> None:
        """`report_program` for a claim that the program never does something (see `absence`); `premises`
        the rule proves besides it."""
        message, severity = absence(facts, message, severity)
        self.report_program(ctx, message, fix, severity, autofix, premises=(absence_premise(ctx, facts), *premises))


def program_premises(rule) -> tuple:
    """What a claim about a whole program rests on: the rule's premises but the line running."""
    return tuple(name for name in rule.premises if name != "executes")


def absence_premise(ctx: ProgramContext, facts: ProgramFacts) -> Premise:
    """"The program never does X" is a value acclint can prove only over the calls it followed."""
    if facts.open_calls:
        return Premise("value", False, unfollowed(facts.open_calls))
    return Premise("value", True, f"every call reached from {ctx.program.entry.path} was followed")


def absence(facts: ProgramFacts, message: str, severity: Optional[str] = None) -> tuple:
    """A claim that the program never does something holds only over the calls acclint could follow:
    where its set-up calls code chosen at run time, the claim is info and names those calls."""
    if not facts.open_calls:
        return message, severity
    return f"{message} {unfollowed(facts.open_calls)}", "info"


def unfollowed(steps: list, shown: int = 3) -> str:
    """`2 calls acclint could not follow may run code it did not read (a, b): if none of them does it, ...`"""
    named = ", ".join(f"`{_call_text(step.fact)}` at {where(step)}" for step in steps[:shown])
    more = f" and {len(steps) - shown} more" if len(steps) > shown else ""
    count = f"{len(steps)} call{'s' if len(steps) != 1 else ''}"
    return (f"Not certain: {count} whose target is chosen at run time ({named}{more}) may run code acclint "
            "did not read; if none of them does it, this holds.")


def _call_text(call) -> str:
    if call.callee != "?" or call.receiver is None:
        return f"{call.callee}()"
    target = call.receiver
    return f"{target.base}(...)(...)" if target.base_call else f"{target.base}[...](...)"


def at_entry_start(ctx: ProgramContext, code: str, *imports: str) -> InsertStatement:
    """A statement first in the entry's `if __name__ == "__main__":` block (where `report_program`
    reports), else before the statement it reports at."""
    return InsertStatement(code=code, imports=imports, into_body=ctx.program.entry.main_guard is not None)


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

    # Calls that switch the effect, and the argument that switches it on: name -> (keyword, position, code).
    switch_on: ClassVar[dict] = {}
    # The statement (and its imports) that switches it on at the start of the entry point; None = no autofix.
    switch_on_statement: ClassVar[Optional[tuple]] = None

    def written(self, facts: FileFacts) -> Iterator[Written]:
        for group in (facts.calls, facts.assignments):
            for fact in group:
                setting = determinism_setting(fact)
                if setting is not None and setting[0] == self.effect and not setting[1]:
                    yield Written(fact.node, self.off_message(setting[2]), self.fix_text(), autofix=self._switch_on(fact))

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        if self.effect in facts.effects or not self.required(ctx, facts):
            return
        off = facts.effects_off.get(self.effect)
        opt_in = facts.optional_effects.get(self.effect)
        if off is None and opt_in is not None:  # on only behind a flag the default run lacks
            option = opt_in.default.option
            self.report_at_source(
                ctx, opt_in.source,
                f"{runs_only_when(opt_in.source.what, opt_in.guard, opt_in.default)}: a run started without it "
                f"has {self.effect.replace('-', ' ')} off. {self.off_consequence[:1].upper()}{self.off_consequence[1:]}",
                f"pass {option} in every launch command of a parity run, or make it the default"
                if opt_in.default.is_flag else f"set {option} in the config of a parity run, or make it the default",
                # Shown at the setting, the claim is about the program's default run, which skips that line.
                rests_on=program_premises(self))
        elif off is None:
            statement = self.switch_on_statement
            autofix = (unsafe_fix(f"add {statement[0]}", at_entry_start(ctx, *statement))
                       if statement else None)
            self.report_absence(ctx, facts, self.missing_message(ctx, facts), self.fix_text(), autofix=autofix)
        elif off.step is None:  # switched off in a launch script; Python lines report themselves
            self.report_at_source(ctx, off, self.off_message(off.describe()), self.fix_text())

    def _switch_on(self, fact) -> Optional[Fix]:
        for name in sorted(getattr(fact, "names", ())):
            if name in self.switch_on:
                keyword, position, code = self.switch_on[name]
                # Unsafe: someone switched it off on purpose (speed, or an op without a deterministic kernel).
                return unsafe_fix(f"switch {self.effect} on", SetArgument(keyword=keyword, position=position, code=code))
        return None
