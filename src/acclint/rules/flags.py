"""Defaults of command-line flags and config fields, as the program's own files declare them:
argparse `add_argument` / `set_defaults`, and class-body fields (dataclasses, HfArgumentParser,
pydantic). Used to tell whether code under `if args.seed is not None:` runs by default."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from acclint.linter.context import ProgramContext
from acclint.linter.facts import NOT_LITERAL, FileFacts, FlagGuard
from acclint.rules.flow import cached
from acclint.rules.memo import per_flow

# argparse actions whose default is not None when `default=` is not given.
_ACTION_DEFAULTS = {"store_true": False, "store_false": True}


@dataclass(frozen=True)
class Declared:
    """One declaration of a flag or field: its spelling, its default (NOT_LITERAL if unknown), where."""

    option: str  # "--seed" for a flag, "seed" for a config field
    default: object
    where: str  # "train.py:12"
    is_flag: bool


OffByDefault = Declared  # a declaration whose default makes the guarded code skip


def _off_by_default(declarations: tuple, guard: FlagGuard) -> Optional[Declared]:
    """The declaration that makes `guard` false in a run given no flags, if every declaration of that
    name does; None when it is on by default or its default cannot be seen."""
    if "." not in guard.dotted:
        return None  # a plain local (often a parameter): its value comes from the caller
    receiver, key = guard.dotted.rsplit(".", 1)
    flags, fields = declarations
    # Parsed flags live in a plain local (`args.seed`, `opt.seed`); `self.config.seed` is
    # usually a config file's value that a flag only overrides, so only declared fields count.
    found = (flags.get(key) if "." not in receiver else None) or fields.get(key)
    if not found or not all(_off(d.default, guard.form) for d in found):
        return None
    return found[0]


def written_opt_in(facts: FileFacts, node: int) -> Optional[tuple]:
    """(guard, declaration) when the fact at `node` runs only under a flag that this file declares off
    by default (`if args.allow_tf32:` with `--allow_tf32` store_true): what a file writes there is
    the user's opt-in, not what its default run does."""
    guards = cached(facts, "flag-guards-by-node", _guards_by_node).get(node, ())
    if not guards:
        return None
    declarations = cached(facts, "declarations", lambda f: _collect_files([f]))
    # Command-line flags only: a config field's value usually comes from a YAML or JSON file this
    # file does not show (a trainer config switching mixed precision on), so its default says little.
    return _first_off(declarations, guards, flags_only=True)


def _first_off(declarations: tuple, guards: tuple, flags_only: bool = False) -> Optional[tuple]:
    """(guard, declaration) of the first of `guards` that `declarations` make off by default."""
    for guard in guards:
        default = _off_by_default(declarations, guard)
        if default is not None and (default.is_flag or not flags_only):
            return guard, default
    return None


def _guards_by_node(facts: FileFacts) -> dict:
    return {fact.node: fact.flag_guards for group in (facts.calls, facts.assignments, facts.env_writes)
            for fact in group if fact.flag_guards}


def documented_starts(ctx: ProgramContext) -> list:
    """The documented commands (linter.documented) that start a program with no launch script
    beside its entry; none for a program that has launch scripts, which say how it starts."""
    return [] if ctx.program.launches else ctx.project.documented_launches(ctx.program.entry)


def passed_by_launch(ctx: ProgramContext, guard: FlagGuard, default: Declared) -> bool:
    """Whether a launch of the program passes the flag (so the guarded code runs): a line of its
    launch scripts, else a command its documentation shows."""
    launches = [launch for _, launch in ctx.program.launches] or [d.launch for d in documented_starts(ctx)]
    passed = set()
    for launch in launches:
        passed.update(launch.flags())
    return bool((_spellings(default.option) | _spellings(guard.dotted)) & passed)


def _spellings(name: str) -> set:
    """How a launch line may spell the flag behind `args.use_ascend` or `--use_ascend`."""
    key = name.rsplit(".", 1)[-1].lstrip("-")
    return {key, key.replace("_", "-")}


# Words a launch passes to say no (`--use_ascend False`).
_NO_WORDS = frozenset({"false", "0", "no", "none", "off"})


def launch_contradicts(guards: tuple, launch) -> bool:
    """Whether `launch` passes a flag whose value makes one of `guards` false, so the code under it does
    not run in that launch: `--use_ascend False` for `if args.use_ascend == "True":` or `if args.use_ascend:`."""
    passed = launch.flags()
    for guard in guards:
        value = next((passed[k].value for k in sorted(_spellings(guard.dotted)) if k in passed), None)
        if value is None:
            continue
        value = value.strip("'\"")
        if (guard.form == "equals" and value != guard.value) or (guard.form == "differs" and value == guard.value) \
                or (guard.form == "truthy" and value.lower() in _NO_WORDS):
            return True
    return False


def opt_in_guard(ctx: ProgramContext, guards: tuple) -> Optional[tuple]:
    """(guard, declaration) of the first guard off by default: code under it does not run in a launch
    that does not pass the flag (whether a launch passes it is asked per run: `passed_by_launch`)."""
    return _first_off(_declarations(ctx), guards)


def runs_only_when(what: str, guard: FlagGuard, default: Declared) -> str:
    """"X runs only when args.seed is not None, and `--seed` defaults to None (train.py:7)"."""
    test = "is not None" if guard.form == "not-none" else "is true"
    spelled = f"`{default.option}`" if default.is_flag else f"the config field `{default.option}`"
    return f"{what} runs only when {guard.dotted} {test}, and {spelled} defaults to {default.default!r} ({default.where})"


def _off(default: object, form: str) -> bool:
    if default is NOT_LITERAL or form not in ("not-none", "truthy"):
        return False  # `== "npu"` picks a branch: neither side is an opt-in
    if form == "not-none":
        return default is None
    return default is None or default is False or default == 0 or default == ""


def _declarations(ctx: ProgramContext) -> tuple:
    return per_flow(ctx, "declarations", _collect)


def _collect(ctx: ProgramContext) -> tuple:
    return _collect_files(ctx.program.files)


def _collect_files(files) -> tuple:
    flags: dict = {}
    fields: dict = {}
    overrides: dict = {}
    for file in files:
        for call in file.calls:
            method = call.method
            if method == "add_argument":
                declared = _argument(file, call)
                if declared is not None:
                    flags.setdefault(declared[0], []).append(declared[1])
            elif method == "set_defaults":
                for arg in call.args:
                    if arg.keyword:
                        overrides[arg.keyword] = arg.value.literal
        for cls in file.classes.values():
            for name, value in cls.fields.items():
                where = f"{file.path}:{file.spans[cls.node].line}"
                fields.setdefault(name, []).append(Declared(name, value.literal, where, False))
    for dest, default in overrides.items():
        if dest in flags:
            flags[dest] = [Declared(d.option, default, d.where, True) for d in flags[dest]]
    return flags, fields


def _argument(file, call) -> Optional[tuple]:
    options = [a.value.literal for a in call.args if a.keyword is None and isinstance(a.value.literal, str)]
    if not options:
        return None
    long = next((o for o in options if o.startswith("--")), options[0])
    dest_arg = call.arg("dest")
    dest = dest_arg.value.literal if dest_arg is not None else long.lstrip("-").replace("-", "_")
    if not isinstance(dest, str):
        return None
    required = call.arg("required")
    default_arg = call.arg("default")
    if not long.startswith("-") or required is not None and required.value.literal is not False:
        default = NOT_LITERAL  # a positional or required argument: always given
    elif default_arg is not None:
        default = default_arg.value.literal
    else:
        action = call.arg("action")
        kind = action.value.literal if action is not None else None
        default = _ACTION_DEFAULTS.get(kind) if kind is None or isinstance(kind, str) else NOT_LITERAL
    where = f"{file.path}:{file.spans[call.node].line}"
    return dest, Declared(long, default, where, True)
