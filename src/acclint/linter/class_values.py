"""Layers built from classes passed as values: `norm_layer=nn.LayerNorm`, `act_layer=nn.GELU`,
`functools.partial(nn.LayerNorm, eps=1e-6)`, `NORMS = {"ln": nn.LayerNorm}`.

Ported models build norms and activations through a parameter: `self.norm = norm_layer(dim)`. The
call names no class, so rules that look for constructor calls (`nn.LayerNorm` without `epsilon`) would
not see it. After the walk (names resolved), this pass follows the class to where it is called and
records the construction it makes there as one more Call at the same node: callee and qualified names
of the class, and the arguments it gets there, after those `partial` bound. Every rule reading calls
sees it; `Call.built_from` says through which name, with the evidence for the finding's premise.

Where the class comes from, in one file: the default of the calling function's parameter, the value a
call of that function (or a construction of its class, for `__init__`) passes for it, a local
`name = partial(...)`, and a module-level dict of classes indexed at the call (`NORMS[kind](dim)`).

Across files (`imported_class_calls`, with the project, for rules' `check_module`): a name that the file
imports from another module of the project, where a module-level `NORM = partial(nn.LayerNorm, ...)` holds
the class, called directly or reaching the call as a default or passed value; the project's own import
resolution (`Project.imported_value`) finds the assignment.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator, Optional

from acclint.linter import facts as F

_PARTIALS = frozenset({"functools.partial"})


class _Index:
    """What one file offers to follow a class: calls by callee text, local assignments by (scope, name),
    module-level dicts of classes. Built once per file."""

    def __init__(self, facts: F.FileFacts, class_tables: dict):
        self.facts = facts
        self.class_tables = class_tables
        self.sites: dict = {}
        for call in facts.calls:
            self.sites.setdefault(call.callee, []).append(call)
        self.assigned: dict = {}
        for assignment in facts.name_assignments:
            self.assigned.setdefault((assignment.scope, assignment.name), []).append(assignment)


def record_class_calls(facts: F.FileFacts, class_tables: dict) -> None:
    """Add to `facts.calls`, after each call of a name holding a class, the construction it makes."""
    index = _Index(facts, class_tables)
    built: dict = {}
    for call in facts.calls:
        if call.names:
            continue  # the callee already resolves (an import, or `name = nn.LayerNorm`)
        found = _distinct(_constructions(index, call))
        if found:
            built[id(call)] = found
    if not built:
        return
    calls: list = []
    for call in facts.calls:
        calls.append(call)
        calls.extend(built.get(id(call), ()))
    facts.calls = calls


def imported_class_calls(project, facts: F.FileFacts) -> list:
    """The constructions of `facts` whose class is assigned in another module of the project: `NORM(dim)` and
    `norm_layer(dim)` with `norm_layer=NORM`, after `from .config import NORM`. Not recorded in the file's
    facts (they depend on the other module), so rules ask for them with the project; the project keeps them
    once per module, as every rule on MindSpore's defaults asks."""
    return project.per_module("imported class calls", facts, lambda module: _imported_class_calls(project, module))


def _imported_class_calls(project, facts: F.FileFacts) -> list:
    index = _Index(facts, {})
    found: list = []
    for call in facts.calls:
        if call.built_from is not None or call.callee == "?":
            continue  # made by the per-file pass, or a call of an expression
        held = list(_holders(index, call, call.callee)) if call.callee.isidentifier() else []
        for value, source in held or [(F.Value(dotted=call.callee), None)]:
            target = project.imported_value(facts, value.dotted) if value.dotted else None
            if target is None:
                continue
            module_file, assignment = target
            where = f"`{value.dotted}` is assigned in {module_file.path}"
            source = (F.ClassValue(value.dotted, None, where, True) if source is None
                      else replace(source, how=f"{source.how}{_at(facts, source.node)}; {where}", node=None))
            found.extend(_built(call, assignment.value, source))
    return _distinct(found)


def _distinct(constructions: Iterator[F.Call]) -> list:
    """One construction per class and arguments: a class several calls pass alike is built once (the
    proven one kept when there is one)."""
    kept: dict = {}
    for built in constructions:
        key = (built.names, tuple((a.keyword, a.star, repr(a.value.literal), a.value.dotted) for a in built.args))
        if key not in kept or (built.built_from.proven and not kept[key].built_from.proven):
            kept[key] = built
    return list(kept.values())


def _constructions(index: _Index, call: F.Call) -> Iterator[F.Call]:
    name = call.callee
    if name == "?" and call.receiver is not None:  # `NORMS[kind](dim)`: every class of the dict
        table = index.class_tables.get(call.receiver.base or "") if call.receiver.chain == ("[]",) else None
        for value, node in table or ():
            yield from _built(call, value, F.ClassValue(call.receiver.base, node, "an entry of the dict", False))
        return
    if not name.isidentifier():
        return
    for value, source in _holders(index, call, name):
        yield from _built(call, value, source)


def _holders(index: _Index, call: F.Call, name: str, depth: int = 0) -> Iterator[tuple]:
    """(Value, ClassValue) for each value `name` may hold where `call` runs; a value that is itself a
    parameter of the passing function (`Block(dim, norm_layer=norm_layer)`) is followed up to 3 calls."""
    for value, source, site in _direct_holders(index, call, name):
        passed_on = value.dotted if value.dotted and not value.names and value.dotted.isidentifier() else None
        if passed_on and site is not None and depth < 3:
            yield from _holders(index, site, passed_on, depth + 1)
        else:
            yield value, source


def _direct_holders(index: _Index, call: F.Call, name: str) -> Iterator[tuple]:
    """(Value, ClassValue, the call passing it or None) for what `name` holds in `call`'s function."""
    assigned = [a for a in index.assigned.get((call.scope, name), ()) if a.order < call.order]
    if assigned:
        last = assigned[-1]
        # `norm_layer = norm_layer or partial(...)`: the right side only when nothing is passed.
        yield last.value, F.ClassValue(name, None, f"assigned in {call.scope}", last.value.op != "or"), None
        return
    function = index.facts.functions.get(call.scope)
    if function is None or name not in function.params:
        return
    passed, defaulted = _passed_values(function, name, index.sites.get(_site_key(function), ()))
    for value, site in passed:
        yield value, F.ClassValue(name, site.node, f"passed to {_site_key(function)}", True), site
    default = function.defaults.get(name)
    if default is not None and (defaulted or not passed):
        # Proven only when this file constructs it and some construction leaves the default.
        yield default, F.ClassValue(name, function.node, f"the default of {function.qualname}", bool(defaulted),
                                    defaulted[0] if defaulted else None), None


def _site_key(function: F.FunctionDef) -> str:
    """The callee text that runs `function`: its class for `__init__`, else its own name."""
    if function.owner and function.qualname == f"{function.owner}.__init__":
        return function.owner
    return function.qualname


def _passed_values(function: F.FunctionDef, name: str, sites) -> tuple:
    """([(Value, the call passing it)] for parameter `name` at `sites`, [nodes of sites that leave the default])."""
    params = list(function.params)
    if function.owner and params and params[0] in ("self", "cls"):
        params = params[1:]
    if name not in params:  # the bound instance or class itself (`def make(cls, ...)`): not a value passed
        return [], []
    position = params.index(name)
    passed, defaulted = [], []
    for site in sites:
        if any(arg.star for arg in site.args):
            continue  # `Block(**cfg)`: what it passes is not written here
        arg = site.arg(name, position)
        if arg is None:
            defaulted.append(site.node)
        else:
            passed.append((arg.value, site))
    return passed, defaulted


def _built(call: F.Call, value: F.Value, source: F.ClassValue) -> Iterator[F.Call]:
    """The constructions `call` makes when its callee holds `value`: a class, a partial of one, or the
    classes on either side of `norm_layer or partial(nn.LayerNorm, eps=1e-6)`."""
    if value.op == "or":
        for operand in value.operands:
            yield from _built(call, operand, source)
        return
    found = _class_of(value)
    if found is None:
        return
    dotted, names, bound = found
    positional = [a for a in bound if a.keyword is None] + [a for a in call.args if a.keyword is None]
    given = {a.keyword for a in call.args if a.keyword is not None}
    keywords = [a for a in bound if a.keyword is not None and a.keyword not in given]
    keywords += [a for a in call.args if a.keyword is not None]
    yield replace(call, callee=dotted, names=names, args=tuple(positional + keywords), receiver=None,
                  built_from=source)


def _class_of(value: F.Value, depth: int = 0) -> Optional[tuple]:
    """(dotted, qualified names, bound Args) of a class value or of `partial(Class, ...)`."""
    if value.dotted and value.names and not value.chain:
        return value.dotted, value.names, ()
    if depth < 3 and value.base_call and value.base_names & _PARTIALS and not value.chain and value.base_args:
        first, *rest = value.base_args
        if first.keyword is None and not first.star:
            inner = _class_of(first.value, depth + 1)
            if inner is not None:
                return inner[0], inner[1], inner[2] + tuple(rest)
    return None


def built_through(facts: F.FileFacts, call: F.Call) -> str:
    """` (built through `norm_layer`, the default of Block.__init__ at train.py:9)` for a message, or ""."""
    source = call.built_from
    if source is None:
        return ""
    return f" (built through `{source.name}`, {source.how}{_at(facts, source.node)})"


def built_premises(facts: F.FileFacts, call: F.Call, premises: tuple = ()) -> tuple:
    """`premises` (what the rule proved) with the `value` premise of a construction made through a name
    (is this the class used?): one `value` premise, proven only if both are."""
    from acclint.findings import Premise

    source = call.built_from
    if source is None:
        return premises
    where = _at(facts, source.node)
    if source.proven:
        left = f", which {_at(facts, source.site).removeprefix(' at ')} leaves" if source.site is not None else ""
        built = Premise("value", True, f"`{source.name}` is {call.callee} here: {source.how}{where}{left}")
    else:
        built = Premise("value", False, f"`{source.name}` may hold {call.callee} ({source.how}{where}); no "
                        "construction in this file shows which class it gets")
    stated = next((p for p in premises if p.premise == "value"), None)
    if stated is not None:
        built = Premise("value", built.proven and stated.proven, f"{built.evidence}; {stated.evidence}")
    return tuple(p for p in premises if p.premise != "value") + (built,)


def _at(facts: F.FileFacts, node: Optional[int]) -> str:
    if node is None or not 0 <= node < len(facts.spans):
        return ""
    return f" at {facts.path}:{facts.spans[node].line}"
