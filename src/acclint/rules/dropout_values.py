"""The probability a dropout call is given, followed as far as the code shows it.

MindSpore's `nn.Dropout` takes `keep_prob` first (the probability to keep; `p=` is the drop
probability), torch's and the functional forms take the drop probability. Code ported with care
converts between them itself: `nn.Dropout(1 - p)`, `keep_prob = 1 - dropout`. These helpers say which
number a call means, and where it comes from, for ACL704 (a drop probability passed as keep_prob) and
ACL209 (dropout active in a parity run).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from acclint.findings import Premise
from acclint.knowledge import table
from acclint.linter.edits import SetArgument
from acclint.linter.facts import Arg, Call, FileFacts, Value
from acclint.rules.values import caller_arguments, enclosing_function, name_origin, number, value_origin


@lru_cache(maxsize=1)
def _table() -> dict:
    return table("usage")["dropout_probability"]


def keep_first(call: Call) -> bool:
    """The call's first argument is a keep probability (MindSpore's nn.Dropout)."""
    return bool(call.names & frozenset(_table()["keep_prob_first"]))


def probability_arg(call: Call) -> tuple:
    """(the argument giving the probability or None, whether it is a keep probability)."""
    if keep_first(call):
        p = call.arg("p")
        return (p, False) if p is not None else (call.arg("keep_prob", 0), True)
    position = 1 if call.names & frozenset(_table()["input_first"]) else 0
    return call.arg("p", position), False


def complement_of(value: Value) -> Optional[Value]:
    """x for `1 - x` (a probability converted to its complement by the code), else None."""
    if value.op == "-" and len(value.operands) == 2 and value.operands[0].literal in (1, 1.0):
        return value.operands[1]
    return None


def default_keep() -> float:
    """What a MindSpore nn.Dropout() without arguments keeps (`keep_prob=0.5`, nn/layer/basic.py)."""
    return _table()["keep_prob_default"]


@dataclass(frozen=True)
class Resolved:
    """A number for a probability and where it comes from (`evidence`); `value` None when not a number
    acclint can tell; `converted` when the code wrote `1 - x` (a probability turned into its complement)."""

    value: Optional[float]
    evidence: str
    converted: bool = False


def _line(file: FileFacts, node: int) -> str:
    return f"{file.path}:{file.spans[node].line}" if 0 <= node < len(file.spans) else file.path


def in_file(file: FileFacts, call: Call, arg: Arg) -> Optional[Resolved]:
    """What `arg` of `call` is, as its own file shows: a literal, `1 - x`, a name rebound before the call
    (to `1 - x` or a literal), a parameter's default, a constant. None when the file does not show it
    (a parameter without default, an attribute): the program's callers or config may."""
    value = arg.value
    if value.is_literal:
        return Resolved(value.literal if number(value.literal) else None, f"written at {_line(file, call.node)}")
    if complement_of(value) is not None:
        return Resolved(None, f"`1 - {complement_of(value).dotted or '...'}` at {_line(file, call.node)}",
                        converted=True)
    name = value.dotted or ""
    if name.startswith("self.") and name.count(".") == 1:
        return _attribute(file, call, name)
    if not name or "." in name:
        return None
    rebound = [a for a in file.name_assignments if a.scope == call.scope and a.name == name and a.order < call.order]
    if rebound:
        last, where = rebound[-1], f"before {_line(file, call.node)}"
        if complement_of(last.value) is not None:
            return Resolved(None, f"`{name} = 1 - ...` {where}", converted=True)
        if number(last.value.literal):
            return Resolved(last.value.literal, f"`{name} = {last.value.literal}` {where}")
        return Resolved(None, f"`{name}` is assigned {where} from code acclint does not follow")
    function = enclosing_function(file, call.scope)
    if function is not None and name in function.params and name not in function.defaults:
        return None
    origin = name_origin(file, call.scope, name, call.order)
    if origin is not None and number(origin.value):
        return Resolved(origin.value, f"{origin.what} ({origin.where})")
    return None


def _attribute(file: FileFacts, call: Call, name: str) -> Optional[Resolved]:
    """`self.x` as the class of `call` last assigns it in its methods before use (`self.keep = 1 - drop`)."""
    function = enclosing_function(file, call.scope)
    owner = function.owner if function is not None else None
    written = [a for a in file.assignments if a.target == name and owner is not None
               and getattr(file.functions.get(a.scope), "owner", None) == owner]
    if not written:
        return None
    last = written[-1]
    if complement_of(last.value) is not None:
        return Resolved(None, f"`{name} = 1 - ...` at {_line(file, last.node)}", converted=True)
    if number(last.value.literal):
        return Resolved(last.value.literal, f"`{name} = {last.value.literal}` at {_line(file, last.node)}")
    return None


def noise(found: Resolved) -> bool:
    """Certainly not a drop probability passed as keep_prob: converted by the code, or a keep
    probability of at least 0.5 (at 0.5 keeping and dropping are the same dropout)."""
    return found.converted or (found.value is not None and found.value >= 0.5)


def keep_premises(found: Resolved) -> tuple:
    """The `value` and `material` premises of "this keep_prob is a drop probability"."""
    if found.converted:
        said = f"{found.evidence}: converted to a keep probability by the code"
        return Premise("value", False, said), Premise("material", False, said)
    if found.value is None:
        return (Premise("value", False, f"{found.evidence}: not resolved to a number"),
                Premise("material", False, "depends on the value, which acclint could not resolve"))
    kept = found.value
    value = Premise("value", kept <= 0.5, f"{found.evidence}: keep_prob={kept:g}")
    if kept == 0.5:
        return value, Premise("material", False, "keep_prob=0.5 keeps what p=0.5 drops: the same dropout either way")
    if kept > 0.5:
        return value, Premise("material", False, f"keep_prob={kept:g} is a keep probability (drops {1 - kept:.0%})")
    return value, Premise("material", True, f"keeps {kept:.0%} of activations where p={kept:g} would keep "
                                            f"{1 - kept:.0%}")


def through_program(project, programs: list, file: FileFacts, call: Call, arg: Arg) -> Resolved:
    """What a name the file leaves open holds in the programs running the call: the arguments the
    callers pass for a parameter (a drop probability below 0.5 from any caller decides), or a config
    class's default for a config attribute."""
    name = arg.value.dotted or ""
    function = enclosing_function(file, call.scope)
    if function is None or name not in function.params:
        origin = value_origin(project, file, call.scope, call.order, arg.value) if name else None
        if origin is not None and number(origin.value):
            return Resolved(origin.value, f"{origin.what} ({origin.where})")
        return Resolved(None, f"`{name or '...'}` at {_line(file, call.node)}")
    found = []
    for program in programs:
        for step, passed in caller_arguments(project, program, file, function, name):
            where = _line(step.file, step.fact.node)
            if passed is None:
                found.append(Resolved(None, f"`{name}` passed through *args/**kwargs at {where}"))
                continue
            if passed.value.is_literal and number(passed.value.literal):
                found.append(Resolved(passed.value.literal, f"`{name}={passed.value.literal}` passed at {where}"))
                continue
            found.append(in_file(step.file, step.fact, passed)
                         or Resolved(None, f"`{passed.value.dotted or '...'}` passed as `{name}` at {where}"))
    if not found:
        entries = ", ".join(p.entry.path for p in programs[:2]) or "no training program"
        return Resolved(None, f"no caller of {function.qualname} in {entries} passes `{name}`")
    dropping = [r for r in found if r.value is not None and r.value < 0.5]
    if dropping:
        return dropping[0]
    return found[0] if all(noise(r) for r in found) else next(r for r in found if not noise(r))


def switch_off(call: Call) -> SetArgument:
    """The edit that switches a dropout call off: `keep_prob=1.0` where a keep probability is written
    (MindSpore's first argument), else `p=0.0` at the probability's place."""
    p, keep = probability_arg(call)
    if keep:
        return SetArgument(keyword="keep_prob", position=0, code="1.0")
    position = None if keep_first(call) else (1 if call.names & frozenset(_table()["input_first"]) else 0)
    return SetArgument(keyword="p", position=position, code="0.0")
