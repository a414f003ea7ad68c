"""Flags and fields as a program's own files declare them, with their defaults: argparse `add_argument` /
`set_defaults`, click options, and class-body fields (dataclasses, HfArgumentParser, pydantic)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from acclint.linter.facts import NOT_LITERAL, Call

# argparse actions whose default is not None when `default=` is not given.
_ACTION_DEFAULTS = {"store_true": False, "store_false": True}


@dataclass(frozen=True)
class Declared:
    """One declaration of a flag or field: its spelling, its default (NOT_LITERAL if unknown), where."""

    option: str  # "--seed" for a flag, "seed" for a config field or key
    default: object
    where: str  # "train.py:12"
    is_flag: bool
    given: bool = False  # a positional or required option: every run passes it


def collect_declarations(files) -> tuple:
    """(flags, fields): argparse/click options by destination and class-body fields by name, each a
    list of Declared (a name declared twice keeps both)."""
    flags: dict = {}
    fields: dict = {}
    overrides: dict = {}
    for file in files:
        for call in file.calls:
            method = call.method
            if method == "add_argument" or _is_click_option(call):
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
            flags[dest] = [Declared(d.option, default, d.where, True, d.given) for d in flags[dest]]
    return flags, fields


def _argument(file, call) -> Optional[tuple]:
    options = [a.value.literal for a in call.args if a.keyword is None and isinstance(a.value.literal, str)]
    if not options:
        return None
    long = next((o for o in options if o.startswith("--")), options[0])
    dest_arg = call.arg("dest")
    named = next((o for o in options if not o.startswith("-")), None) if _is_click_option(call) else None
    dest = dest_arg.value.literal if dest_arg is not None else named or long.lstrip("-").replace("-", "_")
    if not isinstance(dest, str):
        return None
    required = call.arg("required")
    default_arg = call.arg("default")
    given = not long.startswith("-") or required is not None and required.value.literal is not False
    if given:
        default = NOT_LITERAL  # a positional or required argument: always given
    elif default_arg is not None:
        default = default_arg.value.literal
    else:
        action = call.arg("action")
        kind = action.value.literal if action is not None else None
        flag = call.arg("is_flag")  # click: a boolean switch is False unless passed
        if flag is not None and flag.value.literal is True:
            kind = "store_true"
        default = _ACTION_DEFAULTS.get(kind) if kind is None or isinstance(kind, str) else NOT_LITERAL
    where = f"{file.path}:{file.spans[call.node].line}"
    return dest, Declared(long, default, where, True, given)


def _is_click_option(call: Call) -> bool:
    return call.method == "option" and "click.option" in call.names


def click_parameters(files) -> frozenset:
    """The parameter names click options fill (`@click.option("--amp", is_flag=True) def main(amp):`)."""
    found = set()
    for file in files:
        for call in file.calls:
            if _is_click_option(call):
                declared = _argument(file, call)
                if declared is not None:
                    found.add(declared[0])
    return frozenset(found)
