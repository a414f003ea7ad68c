"""Whether a DataLoader feeds training or only a pass that trains nothing (an evaluation, a prediction).

A function that builds a loader, iterates it, and neither steps an optimizer nor computes gradients
(nor calls local code that does) reads the data once for its results: the order its sampler gives
changes no weight. Rules about the order training data comes in ask this before they report.
"""

from __future__ import annotations

from typing import Optional

from acclint.linter.context import ProgramContext
from acclint.linter.facts import Call, FileFacts
from acclint.linter.project import Step, training_role
from acclint.rules.reach import first_call

# How deep into local calls a pass is searched for a training step (the loop body's helpers).
_DEPTH = 3


def _trains(call: Call) -> bool:
    return training_role(call) in ("step", "gradient")


def _bound_name(call: Call) -> Optional[str]:
    """The name a call's result is bound to, also through `a if c else b`."""
    return call.assigned_to or next((s.split(":", 1)[1] for s in call.sinks if s.startswith("name:")), None)


def _iterated(file: FileFacts, scope: str, name: str) -> bool:
    """A loop or comprehension of `scope` iterates `name` (directly, or through enumerate/tqdm/zip)."""
    for block in file.blocks:
        if block.kind not in ("for", "comp") or block.scope != scope:
            continue
        for item in block.items:
            if item.dotted == name or any(arg.value.dotted == name for arg in item.base_args):
                return True
    return False


def evaluation_pass(ctx: ProgramContext, sampler: Step) -> Optional[str]:
    """Why the loader fed by `sampler` is read only in a pass that trains nothing, or None."""
    file, call = sampler.file, sampler.fact
    name = _bound_name(call)
    if name is None or call.scope not in file.functions:
        return None
    loaders = [c for c in file.calls_in(call.scope) if c.order > call.order and
               any(arg.keyword == "sampler" and arg.value.dotted == name for arg in c.args)]
    iterated = [c for c in loaders if c.assigned_to and _iterated(file, call.scope, c.assigned_to)]
    if not iterated or len(iterated) != len(loaders):
        return None  # built for code elsewhere (returned, stored): that code may train on it
    function = file.functions[call.scope]
    if first_call(ctx.project, file, function, _trains, _DEPTH) is not None:
        return None
    return (f"`{function.qualname}` iterates `{iterated[0].assigned_to}` and neither steps an optimizer nor "
            "computes gradients: one pass that trains nothing")
