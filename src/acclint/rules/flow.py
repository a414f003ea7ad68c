"""Per-file views the Ascend/MindSpore rule families share, derived once from a file's facts.

Simple intra-function data flow: names assigned in a function are replayed in source order, so a
rule can ask what a name held when a call ran (a transposed view, a "cuda"-only device test).
Derived views are cached per FileFacts, so several rules reading them cost one pass over the facts.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Optional

from acclint.linter.facts import MODULE_SCOPE, Call, FileFacts, Value

# Methods/attributes that return a transposed (non-contiguous) view of their receiver.
TRANSPOSING = frozenset({"t", "T", "mT", "H", "mH", "transpose", "permute", "swapaxes", "swapdims",
                         "movedim", "moveaxis", "adjoint", "transpose_"})
TRANSPOSING_FUNCTIONS = frozenset({"torch.t", "torch.transpose", "torch.permute", "torch.swapaxes",
                                   "torch.swapdims", "torch.movedim", "torch.moveaxis", "torch.adjoint"})
# Keep the receiver's strides (dtype/device casts, copies with preserve_format, slices).
STRIDE_KEEPING = frozenset({"float", "half", "bfloat16", "double", "to", "type", "type_as", "detach",
                            "clone", "requires_grad_", "[]", "npu", "cuda", "cpu"})

_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def cached(facts: FileFacts, key: str, build):
    """`build(facts)`, computed once per file and key."""
    per_file = _cache.setdefault(facts, {})
    if key not in per_file:
        per_file[key] = build(facts)
    return per_file[key]


def calls_named(facts: FileFacts, names) -> list:
    """Calls whose callee resolves to one of `names`, in source order."""
    return _lookup(cached(facts, "by-name", _index_by_name), names)


def calls_with_method(facts: FileFacts, methods) -> list:
    """Calls of a method (or function) with one of these last names, in source order."""
    return _lookup(cached(facts, "by-method", _index_by_method), methods)


def _lookup(index: dict, keys) -> list:
    found = {id(call): call for key in keys for call in index.get(key, ())}
    return sorted(found.values(), key=lambda c: c.order) if len(found) > 1 else list(found.values())


def _index_by_name(facts: FileFacts) -> dict:
    return _index(facts, lambda call: call.names)


def _index_by_method(facts: FileFacts) -> dict:
    return _index(facts, lambda call: (call.method,))


def _index(facts: FileFacts, keys_of) -> dict:
    index: dict = {}
    for call in facts.calls:
        for key in keys_of(call):
            index.setdefault(key, []).append(call)
    return index


def mentions_any(facts: FileFacts, prefixes: tuple) -> bool:
    """The file imports or calls something under one of the qualified-name prefixes."""
    for imp in facts.imports:
        full = f"{imp.module}.{imp.name}" if imp.name else imp.module
        if full.startswith(prefixes) or imp.module.startswith(prefixes):
            return True
    return any(name.startswith(prefixes) for call in facts.calls for name in call.names)


def short(value: Value) -> str:
    """How a message names a summarised expression."""
    if value.dotted:
        return value.dotted
    if value.base:
        tail = "".join("[...]" if m == "[]" else f".{m}" if m in ("T", "mT", "H", "mH") else f".{m}()"
                       for m in value.chain)
        return f"{value.base}{'(...)' if value.base_call else ''}{tail}"
    return "an expression"


# -- layouts: which names hold transposed views ---------------------------------------------------

def transposed(value: Optional[Value], held: dict) -> str:
    """The name a transposed view was taken of ("" when the expression is not one); `held` maps the
    names that hold a transposed view to theirs."""
    if value is None or value.base is None:
        return ""
    root = value.base
    if value.base_call:
        state = bool(value.base_names & TRANSPOSING_FUNCTIONS)
    elif value.base.rsplit(".", 1)[-1] in TRANSPOSING and "." in value.base:
        state, root = True, value.base.rsplit(".", 1)[0]  # `w.T`
    else:
        state = value.base in held
        root = held.get(value.base, root)
    if _relayout_on_purpose(value.chain):
        return ""  # `x.t().contiguous().t()`: a layout chosen on purpose (e.g. for alignment)
    for method in value.chain:
        if method in TRANSPOSING:
            state = not state  # transposing a transposed view often restores it: then unknown, not reported
        elif method not in STRIDE_KEEPING:
            state = False  # .contiguous(), .reshape(), arithmetic results: fresh memory or unknown
    return root if state else ""


def _relayout_on_purpose(chain: tuple) -> bool:
    """`.t().contiguous().t()`: made contiguous in the transposed layout, then transposed back. A
    `.contiguous()` with no transpose before it (`x.contiguous().transpose(1, 2)`) fixes the other
    layout and leaves the final transpose a plain non-contiguous view."""
    if len(chain) < 3 or chain[-1] not in TRANSPOSING or "contiguous" not in chain[:-1]:
        return False
    last_contiguous = len(chain) - 2 - chain[-2::-1].index("contiguous")
    return any(method in TRANSPOSING for method in chain[:last_contiguous])


def receiver(call: Call) -> Optional[Value]:
    """The expression a method is called on: `x` in `x.view(...)`, `x.t()` in `x.t().view(...)`."""
    if call.receiver is not None:
        return call.receiver
    if call.names or "." not in call.callee:
        return None  # a function, not a method
    base = call.callee.rsplit(".", 1)[0]
    return Value(dotted=base, base=base)


@dataclass
class LayoutEvent:
    call: Call
    receiver_transposed: str  # the name the receiver is a transposed view of, or ""
    transposed_args: list = field(default_factory=list)  # Args holding a transposed view
    roots: list = field(default_factory=list)  # what each of those is a transposed view of


def layout_events(facts: FileFacts) -> list:
    """Every call with what, among its receiver and arguments, is a transposed view."""
    return cached(facts, "layout", _layout_events)


def _layout_events(facts: FileFacts) -> list:
    events = []
    for scope, items in _by_scope(facts).items():
        held: dict = {}
        for item in items:
            if isinstance(item, Call):
                if item.callee == "@" or item.method in _LAYOUT_SENSITIVE or item.names:
                    args = [(a, transposed(a.value, held)) for a in item.args if not a.star]
                    args = [(a, root) for a, root in args if root]
                    rec = transposed(receiver(item), held)
                    if rec or args:
                        events.append(LayoutEvent(item, rec, [a for a, _ in args], [r for _, r in args]))
            else:
                root = transposed(item.value, held)
                if root:
                    held[item.name] = root
                else:
                    held.pop(item.name, None)
    return events


# Methods whose receiver's layout matters to a rule (matmuls, views, collectives on a tensor).
_LAYOUT_SENSITIVE = frozenset({"view", "matmul", "mm", "bmm", "addmm", "all_reduce", "all_gather",
                               "reduce_scatter", "broadcast", "all_to_all"})


def _by_scope(facts: FileFacts) -> dict:
    """Calls and name assignments of each function, merged in source order."""
    return cached(facts, "by-scope", _merge_by_scope)


def _merge_by_scope(facts: FileFacts) -> dict:
    scopes: dict = {}
    for item in facts.calls:
        scopes.setdefault(item.scope, []).append(item)
    for item in facts.name_assignments:
        scopes.setdefault(item.scope, []).append(item)
    for items in scopes.values():
        items.sort(key=lambda i: i.order)
    return scopes


def value_of(facts: FileFacts, value: Value, call: Call) -> Value:
    """A name's last assignment before `call` in its function (or the module), else the value itself."""
    if not value.dotted:
        return value
    name = value.dotted
    if name.startswith("self."):
        for assignment in facts.assignments:
            if assignment.target == name:
                return assignment.value
        return value
    for scope in (call.scope, MODULE_SCOPE):
        best = None
        for item in _by_scope(facts).get(scope, ()):
            if not isinstance(item, Call) and item.name == name and (scope != call.scope or item.order < call.order):
                best = item
        if best is not None:
            return best.value
    return value


def assigned_before(facts: FileFacts, name: str, scope: str, order: float) -> Optional[tuple]:
    """(order, Value) of the last `name = ...` in `scope` before `order` (None when there is none)."""
    best = None
    for assignment in cached(facts, "assignments-by-name", _assignments_by_name).get((scope, name), ()):
        if assignment.order >= order:
            break
        best = assignment
    return (best.order, best.value) if best is not None else None


def _assignments_by_name(facts: FileFacts) -> dict:
    found: dict = {}
    for assignment in facts.name_assignments:
        found.setdefault((assignment.scope, assignment.name), []).append(assignment)
    return found


def in_autograd_backward(facts: FileFacts, scope: str) -> bool:
    """`scope` is the `backward` of a torch.autograd.Function subclass (custom fused or TP layers)."""
    function = facts.functions.get(scope)
    if function is None or not scope.endswith(".backward") or function.owner is None:
        return False
    owner = facts.classes.get(function.owner)
    if owner is None:
        return False
    for base in owner.bases:
        if base.names & _AUTOGRAD_FUNCTIONS or (base.dotted or "").rsplit(".", 1)[-1] == "Function":
            return True
    return False


_AUTOGRAD_FUNCTIONS = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})
