"""The records a read of a launch shell script produces (see `acclint.linter.shell`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Sequence


class ShellReadError(ValueError):
    """The file is not a shell script we can read (binary, not UTF-8, unreadable)."""


@dataclass(frozen=True)
class Span:
    """1-based line and column (in characters), end exclusive; `path` is the file the text is in."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int

    def covers(self, other: "Span") -> "Span":
        """The span from the start of `self` to the end of `other` (same file, `other` later)."""
        return Span(self.path, self.line, self.column, other.end_line, other.end_column)

    def precedes(self, other: "Span") -> bool:
        return self.path == other.path and (self.end_line, self.end_column) <= (
            other.line,
            other.column,
        )


@dataclass(frozen=True)
class EnvAssignment:
    name: str
    value: Optional[str]  # expanded value if it can be known statically, else None
    raw: str  # the value as written (for arrays, the whole `( ... )`)
    exported: bool  # `export X=..` (or a later `export X`) vs a plain shell variable
    span: Span  # the whole `NAME=value` where the value was written


@dataclass(frozen=True)
class Argument:
    text: str  # the expanded word; unknown expansions keep their text as written ("$DATA_PATH")
    span: Span  # where the text was written (inside a variable's assignment if it came from one)
    known: bool = True  # False when part of the text is an expansion we could not resolve
    # The text node (assignment value or command word) the word was written in: two words with
    # the same origin were written side by side, so a span covering both means something.
    origin: Optional[Span] = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class FlagValue:
    value: Optional[str]  # None for a bare switch like --bf16
    span: Span  # the flag word, extended over its value when both were written side by side
    value_span: Optional[Span] = None  # where the value was written (may be another assignment)
    known: bool = True


# `-1`, `-1e-4`, `-.5` are values, not flags.
_NEGATIVE_NUMBER = re.compile(r"-\.?\d")


def is_flag(text: str) -> bool:
    # Like argparse: negative numbers and words with a space before any `=` ("-a b") are values.
    if not text.startswith("-") or text in ("-", "--") or _NEGATIVE_NUMBER.match(text):
        return False
    return " " not in text.partition("=")[0]


def parse_flags(args: Sequence[Argument]) -> dict[str, FlagValue]:
    """`--a-b v`, `--a-b=v`, bare `--flag`; key without leading dashes; last occurrence wins."""
    flags: dict[str, FlagValue] = {}
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if not is_flag(arg.text):
            continue
        name, eq, inline = arg.text.lstrip("-").partition("=")
        if eq:
            flags[name] = FlagValue(inline, arg.span, arg.span, arg.known)
        elif index < len(args) and not is_flag(args[index].text) and args[index].text != "--":
            value = args[index]
            index += 1
            flags[name] = FlagValue(value.text, _flag_span(arg, value), value.span, value.known)
        else:
            flags[name] = FlagValue(None, arg.span)
    return flags


def _flag_span(flag: Argument, value: Argument) -> Span:
    side_by_side = flag.origin is not None and flag.origin == value.origin
    return flag.span.covers(value.span) if side_by_side and flag.span.precedes(value.span) else flag.span


@dataclass(frozen=True)
class LaunchCommand:
    # normalised: "torchrun", "torch.distributed.launch", "msrun", "deepspeed", "accelerate",
    # "mpirun", "python"
    launcher: str
    script: Optional[str]  # the training script as written, or the module of `python -m pkg.mod`
    launcher_args: tuple[Argument, ...]  # args between the launcher and the script
    script_args: tuple[Argument, ...]  # args after the script
    env: tuple[EnvAssignment, ...]  # prefix assignments on this command line (`FOO=1 python ..`)
    span: Span
    # Exported variables in effect when the command runs (exports after it do not reach it).
    inherited_env: tuple[EnvAssignment, ...] = ()
    # Written in the body of a `for`/`while`/`until` loop: the line may start one process per pass.
    repeated: bool = False

    def flags(self) -> dict[str, FlagValue]:
        return parse_flags(self.script_args)

    def launcher_flags(self) -> dict[str, FlagValue]:
        return parse_flags(self.launcher_args)

    def effective_env(self) -> dict[str, EnvAssignment]:
        """The environment the launched process sees, as far as the script shows it."""
        merged = {assignment.name: assignment for assignment in self.inherited_env}
        merged.update((assignment.name, assignment) for assignment in self.env)
        return merged


@dataclass
class ShellScript:
    path: str
    # Assignments in order (plain and exported), including those of sourced files; a later
    # `export X` of an earlier `X=1` appears again, with exported=True and the span of `X=1`.
    env: list[EnvAssignment] = field(default_factory=list)
    # Final state of every shell variable after sourcing (`unset` removes one).
    variables: dict[str, EnvAssignment] = field(default_factory=dict)
    launches: list[LaunchCommand] = field(default_factory=list)
    sourced: list[str] = field(default_factory=list)  # paths followed
    unresolved_sources: list[str] = field(default_factory=list)  # `source X` not followed
    # Every path looked at for a `source` (found or not): what was read depends on these files too,
    # so a cached read is good only while each is as it was (linter.cache).
    source_lookups: list[str] = field(default_factory=list)

    def final_env(self) -> dict[str, EnvAssignment]:
        """Exported variables only, last assignment wins."""
        return {name: assignment for name, assignment in self.variables.items() if assignment.exported}
