"""Whether a program replaces the initial value of a layer's weight after building it: a checkpoint
loaded into the network, or the parameter's data set by the program's own initialisation
(knowledge/usage.toml, `weights_replaced`). An initialiser default then does not reach training."""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from acclint.findings import Premise
from acclint.knowledge import table
from acclint.linter.facts import Call
from acclint.rules.program_facts import global_draw


@lru_cache(maxsize=1)
def _table() -> dict:
    return table("usage")["weights_replaced"]


def replaced(calls, attribute: str) -> Optional[tuple]:
    """(file, call, what) of the first of `calls` ((file, Call) pairs) that replaces `attribute`'s data or
    loads a checkpoint."""
    loads = frozenset(_table()["checkpoint_loads"])
    setters = frozenset(_table()["setters"])
    for file, call in calls:
        if call.names & loads:
            return file, call, f"a checkpoint loaded by `{call.callee}`"
        receiver = call.receiver.dotted if call.receiver is not None else None
        written = receiver or call.callee.rsplit(".", 1)[0]
        if call.method in setters and attribute in written.split("."):
            return file, call, f"`{call.callee}` re-initialising `{attribute}`"
    return None


def at(file, call) -> str:
    return f"{file.path}:{file.spans[call.node].line}"


def initial_value_matters(project, programs: list, attribute: str) -> Premise:
    """`material` of a claim about `attribute`'s initial value (ACL705's embedding table): proven when a
    program running the line does not replace it; replaced only under a flag leaves it unproven; replaced
    on every run by every program disproves it."""
    if not programs:
        return Premise("material", False, "no training program shows whether the initial weights reach training")
    found = [(program, project.derived(f"replaces {attribute}", program,
                                       lambda p: replaced(((s.file, s.fact) for s in p.calls()), attribute)))
             for program in programs]
    for program, replacement in found:
        if replacement is None:
            return Premise("material", True, f"nothing in the program started by {program.entry.path} loads a "
                                             f"checkpoint or re-initialises `{attribute}`")
    for _, (file, call, what) in found:
        if call.flag_guards:
            return Premise("material", False, f"{what} at {at(file, call)} under `if {call.flag_guards[-1].dotted}` "
                                              "replaces the initial values in runs that set it")
    file, call, what = found[0][1]
    return Premise("material", False, f"{what} at {at(file, call)} replaces the initial values before training")


def draws_replaced(ctx, usage: str) -> Optional[Premise]:
    """`material` of "the program draws from this generator unseeded" (`usage`: "numpy-random" /
    "python-random"): when every draw of the flow initialises weights inside a model construction and a
    checkpoint loaded after the last of them replaces those weights, the draws never reach training
    (disproven; a load under a flag leaves it unproven). None when a draw happens elsewhere."""
    program, bases = ctx.program, frozenset(table("usage")["models"]["base_classes"])
    loads = frozenset(_table()["checkpoint_loads"])
    models, draws = [], []  # open model constructions (steps); (draw step, outermost model step)
    for step in program.flow:
        while models and models[-1].depth >= step.depth:
            models.pop()  # returned from that constructor
        call = step.fact
        if not isinstance(call, Call):
            continue
        if any(global_draw(name) == usage for name in call.names):
            if not models:
                return None  # a draw outside weight initialisation: it reaches training
            draws.append((step, models[0]))
        if ctx.project.constructed_class_names(step.file, call) & bases:
            models.append(step)
    if not draws:
        return None
    last = draws[-1][0].index
    load = next((s for s in program.flow[last + 1:] if isinstance(s.fact, Call) and s.fact.names & loads), None)
    if load is None:
        return None
    draw, model = draws[0]
    said = (f"`{draw.fact.callee}()` at {at(draw.file, draw.fact)} initialises weights of `{model.fact.callee}()` "
            f"({at(model.file, model.fact)}), and the checkpoint loaded by `{load.fact.callee}` at "
            f"{at(load.file, load.fact)}")
    if load.fact.flag_guards:
        return Premise("material", False, f"{said} under `if {load.fact.flag_guards[-1].dotted}` replaces them in "
                                          "runs that set it")
    return Premise("material", False, f"{said} replaces them before training")


def reference_init(facts, names: frozenset) -> Optional[tuple]:
    """(name, line) of a model-wide initialiser scale the file takes or reads (`initializer_range=0.02`,
    `config.initializer_range`): the model initialises its weights from it rather than a layer default."""
    for function in facts.functions.values():
        for param in function.params:
            if param in names:
                return param, facts.spans[function.node].line
    for call in facts.calls:
        for arg in call.args:
            last = (arg.value.dotted or "").rsplit(".", 1)[-1]
            if last in names:
                return arg.value.dotted, facts.spans[call.node].line
    return None
