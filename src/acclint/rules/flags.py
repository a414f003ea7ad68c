"""Whether code under `if args.seed is not None:` runs, asked the way rules ask it: the run's
configuration (linter.runconfig: launch flags, the config files a run loads, the defaults in the code)
decides; this module phrases it for rules."""

from __future__ import annotations

from typing import Optional

from acclint.linter.context import ProgramContext
from acclint.linter.facts import FlagGuard
from acclint.linter.runconfig import NO_WORDS, SKIPPED, TAKEN, Declared, program_launches, run_config, spellings

OffByDefault = Declared  # a declaration whose default makes the guarded code skip


def documented_starts(ctx: ProgramContext) -> list:
    """The documented commands (linter.documented) that start a program with no launch script
    beside its entry; none for a program that has launch scripts, which say how it starts."""
    return [] if ctx.program.launches else ctx.project.documented_launches(ctx.program.entry)


def passed_by_launch(ctx: ProgramContext, guard: FlagGuard, default: Declared) -> bool:
    """Whether a run of the program takes the code under `guard` after all: a line of its launch scripts
    (else a command its documentation shows) passes the flag, or loads a config that sets the key."""
    launches = program_launches(ctx.project, ctx.program)
    if not launches:
        return False
    branch = run_config(ctx.project, ctx.program, launches).decide(guard)
    return branch is not None and branch.state == TAKEN


def launch_contradicts(guards: tuple, launch) -> bool:
    """Whether `launch` passes a flag whose value makes one of `guards` false, so the code under it does
    not run in that launch: `--use_ascend False` for `if args.use_ascend == "True":` or `if args.use_ascend:`."""
    passed = launch.flags()
    for guard in guards:
        value = next((passed[k].value for k in sorted(spellings(guard.dotted)) if k in passed), None)
        if value is None:
            continue
        value = value.strip("'\"")
        if (guard.form == "equals" and value != guard.value) or (guard.form == "differs" and value == guard.value) \
                or (guard.form == "truthy" and value.lower() in NO_WORDS):
            return True
    return False


def opt_in_guard(ctx: ProgramContext, placed: tuple) -> Optional[tuple]:
    """(guard, declaration) of the first guard that the program started alone skips (a flag off by
    default, a key no config it loads sets): code under it does not run unless a launch turns it on
    (whether one does is asked per run: `passed_by_launch`). `placed`: ((FlagGuard, FileFacts), ...)."""
    config = run_config(ctx.project, ctx.program, [])
    for guard, file in placed:
        branch = config.decide(guard, file)
        if branch is not None and branch.state == SKIPPED:
            return guard, branch.declared()
    return None


def runs_only_when(what: str, guard: FlagGuard, default: Declared) -> str:
    """"X runs only when args.seed is not None, and `--seed` defaults to None (train.py:7)"."""
    test = "is not None" if guard.form == "not-none" else "is true"
    spelled = f"`{default.option}`" if default.is_flag else f"the config field `{default.option}`"
    return f"{what} runs only when {guard.dotted} {test}, and {spelled} defaults to {default.default!r} ({default.where})"
