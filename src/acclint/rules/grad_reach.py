"""Whether what a `with` region computes reaches a gradient: the names it binds are followed through
its function (assignments, calls they are passed to, containers they are appended to, `with`/`for`
targets), and through the callers in the same file of a function that returns them.

A precision setting around code whose results never reach a backward (validation images generated
for a tracker, a final round of inference after training) does not change the trained weights. The
answer is `reached` (with the call), `unreached` (every use followed, none is a gradient) or
`unknown` (a use the file cannot follow: stored on `self`, returned from a function the file never
calls, handed to a local function that steps, ...). Only `unreached` is a claim; flows are followed
regardless of order (a loop's next iteration reads what the previous one bound), which can only make
more names reach a gradient.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from acclint.linter.facts import Block, Call, FileFacts, Value

REACHED, UNREACHED, UNKNOWN = "reached", "unreached", "unknown"
_GRADIENT_METHODS = frozenset({"backward", "manual_backward"})
_GRADIENT_CALLS = frozenset({"torch.autograd.grad", "torch.autograd.backward"})
# Methods that put their arguments into the receiver (`images.append(image)`).
_STORING = frozenset({"append", "extend", "insert", "add", "update", "put", "setdefault", "appendleft"})
_DEPTH = 2  # callers followed for a function that returns what the region computed


@dataclass(frozen=True)
class Reach:
    state: str
    evidence: str


def with_region(facts: FileFacts, call: Call) -> Optional[Block]:
    """The `with` block whose context manager `call` builds: written in its header, or bound to a name
    that a later `with` of the same function enters (`ctx = autocast(...) if a else nullcontext()`)."""
    for block in facts.blocks:
        if block.kind == "with" and block.scope == call.scope and block.start < call.order < block.head_end:
            return block
    names = set(_sink_names(call.sinks))
    return next((b for b in facts.blocks if b.kind == "with" and b.scope == call.scope and b.start > call.order
                 and any(item.dotted in names for item in b.items)), None)


def region_reach(facts: FileFacts, block: Block) -> Reach:
    """Where what `block` (a `with` region) computes goes, within its file."""
    bound = set(block.targets) | _bound_inside(facts, block)
    if "self" in bound:
        return Reach(UNKNOWN, "the region stores what it computes on the object")
    if any(facts.returns[i].scope == block.scope and block.head_end < facts.returns[i].order < block.end
           for i in range(len(facts.returns))):
        return _through_callers(facts, block.scope, "returns from inside the region", _DEPTH)
    if not bound:
        return Reach(UNREACHED, "it binds nothing")
    return _follow(facts, block.scope, bound, _DEPTH, inside=block, since=_window_start(facts, block))


def _bound_inside(facts: FileFacts, block: Block) -> set:
    """Names the region binds or stores into (`images.append(...)`, `out.x = ...`); `self` when it stores
    on the object (followed no further)."""
    inside = block.head_end, block.end
    names = {a.name for a in facts.name_assignments if a.scope == block.scope and inside[0] < a.order < inside[1]}
    names |= {a.target.split(".", 1)[0] for a in facts.assignments
              if a.scope == block.scope and inside[0] < a.order < inside[1]}
    for call in facts.calls:
        if call.scope == block.scope and inside[0] < call.order < inside[1]:
            names.update(_sink_names(call.sinks))
            if _escapes(call.sinks):
                names.add("self")
            if call.method in _STORING and _receiver_name(call):
                names.add(_receiver_name(call))
    return names


def _window_start(facts: FileFacts, where) -> int:
    """From where what a region (a Block) or a call computes can be read: after it, or anywhere in the
    outermost `for` loop around it (the next iteration reads it); anywhere in the function when it runs in
    a `while` loop (no block)."""
    start, end = (where.start, where.end) if isinstance(where, Block) else (where.order, where.order + 1)
    head = where.head_end if isinstance(where, Block) else end
    loops = [b for b in facts.blocks if b.kind == "for" and b.scope == where.scope and b.start < start and end <= b.end]
    if loops:
        return min(b.start for b in loops)
    in_loop = any(c.in_loop for c in facts.calls if c.scope == where.scope and start <= c.order < head)
    return -1 if in_loop else start


def _bound_next_of(facts: FileFacts, call: Call) -> set:
    """`a, b = f(...)`: the names a call's result is unpacked into (the call records no sink)."""
    if call.sinks:
        return set()
    return _bound_next([a for a in facts.name_assignments if a.scope == call.scope], call.order)


def _follow(facts: FileFacts, scope: str, tainted: set, depth: int, inside: Optional[Block] = None,
            since: int = -1) -> Reach:
    """Follow `tainted` names through the facts of `scope` after `since` until nothing new is bound."""
    functions = _gradient_functions(facts)
    calls = [c for c in facts.calls if c.scope == scope and c.order > since]
    if inside is not None:  # a gradient taken inside the region uses what it computes
        for call in calls:
            if inside.head_end < call.order < inside.end and _is_gradient(call, functions):
                return Reach(REACHED, f"{call.callee} at line {_line(facts, call.node)}")
    assignments = [a for a in facts.name_assignments if a.scope == scope and a.order > since]
    attributes = [a for a in facts.assignments if a.scope == scope and a.order > since]
    blocks = [b for b in facts.blocks if b.scope == scope and b.kind in ("with", "for") and b.start > since]
    returns = [r for r in facts.returns if r.scope == scope and r.order > since]
    while True:
        before = len(tainted)
        for call in calls:
            if not _uses(call, tainted):
                continue
            if _is_gradient(call, functions):
                return Reach(REACHED, f"{call.callee} at line {_line(facts, call.node)}")
            if "return" in call.sinks:
                return _through_callers(facts, scope, "returns it", depth)
            if _escapes(call.sinks):
                return Reach(UNKNOWN, f"line {_line(facts, call.node)} stores it")
            tainted.update(_sink_names(call.sinks))
            if not call.sinks:  # `a, b = f(x)` records no sink: the names bound next may hold its result
                tainted.update(_bound_next(assignments, call.order))
            if call.method in _STORING:
                container = _receiver_name(call)
                if container == "self":
                    return Reach(UNKNOWN, f"line {_line(facts, call.node)} stores it on self")
                if container:
                    tainted.add(container)
        for assignment in assignments:
            if _names(assignment.value) & tainted:
                tainted.add(assignment.name)
        for assignment in attributes:
            if _names(assignment.value) & tainted:
                if assignment.target.startswith("self."):
                    return Reach(UNKNOWN, f"line {_line(facts, assignment.node)} stores it in {assignment.target}")
                tainted.add(assignment.target.split(".", 1)[0])
        for block in blocks:
            if any(_names(item) & tainted for item in block.items):
                tainted.update(block.targets)
        if any(_names(r.value) & tainted for r in returns):
            return _through_callers(facts, scope, "returns it", depth)
        if len(tainted) == before:
            break
    # Augmented and item assignments (`total += loss`, `losses[i] = loss`) leave no fact to follow: a
    # gradient taken where the results may still be read could use them.
    later = next((c for c in calls if _is_gradient(c, functions)), None)
    if later is not None:
        return Reach(UNKNOWN, f"{later.callee} at line {_line(facts, later.node)} may read what it computes")
    return Reach(UNREACHED, f"what it computes ({', '.join(sorted(tainted)[:3])}) reaches no backward in "
                            f"{_where(scope)}")


def _bound_next(assignments: list, order: int) -> set:
    """The names of the first assignment after `order` (all targets of a tuple unpacking)."""
    later = [a.order for a in assignments if a.order > order]
    return {a.name for a in assignments if later and a.order == min(later)}


def _through_callers(facts: FileFacts, scope: str, how: str, depth: int) -> Reach:
    """A function hands the region's result back: follow it in each caller of the same file."""
    name = scope.rsplit(".", 1)[-1]
    sites = [c for c in facts.calls if c.method == name and (c.callee == name or c.callee == f"self.{name}")]
    if depth == 0 or not sites or name in ("forward", "__call__"):
        return Reach(UNKNOWN, f"{_where(scope)} {how} to callers acclint does not follow")
    for site in sites:
        if "return" in site.sinks:
            found = _through_callers(facts, site.scope, how, depth - 1)
        elif _escapes(site.sinks):
            found = Reach(UNKNOWN, f"line {_line(facts, site.node)} stores what {name} returns")
        else:
            found = _follow(facts, site.scope, set(_sink_names(site.sinks)) | _bound_next_of(facts, site),
                            depth - 1, since=_window_start(facts, site))
        if found.state != UNREACHED:
            return found
    return Reach(UNREACHED, f"{_where(scope)} {how} only to callers where it reaches no backward")


def _gradient_functions(facts: FileFacts) -> frozenset:
    """Functions of the file that take a gradient themselves (`train_step(loss)`)."""
    return frozenset(c.scope.rsplit(".", 1)[-1] for c in facts.calls if _takes_gradient(c))


def _takes_gradient(call: Call) -> bool:
    return call.method in _GRADIENT_METHODS or bool(call.names & _GRADIENT_CALLS)


def _is_gradient(call: Call, functions: frozenset) -> bool:
    return _takes_gradient(call) or call.method in functions


def _receiver_name(call: Call) -> str:
    """The local name a method is called on (`images` of `images.append(x)`, `self` of `self.x.add(y)`)."""
    if call.receiver is not None:
        return (call.receiver.dotted or "").split(".", 1)[0]
    head, _, _ = call.callee.rpartition(".")
    return head.split(".", 1)[0] if head and not head.startswith("?") else ""


def _uses(call: Call, tainted: set) -> bool:
    values = [a.value for a in call.args] + ([call.receiver] if call.receiver is not None else [])
    return _receiver_name(call) in tainted or any(_names(v) & tainted for v in values)


def _names(value: Value) -> set:
    """The local names an expression reads (the first part of each dotted name)."""
    found = set()
    for text in (value.dotted, value.base):
        if text:
            found.add(text.split(".", 1)[0].split("[", 1)[0])
    for operand in value.operands:
        found |= _names(operand)
    for arg in tuple(value.base_args) + tuple(a for args in value.chain_args for a in _as_args(args)):
        found |= _names(arg.value)
    return found


def _as_args(args) -> tuple:
    return tuple(args) if isinstance(args, (list, tuple)) else ()


def _sink_names(sinks: tuple) -> list:
    return [s.split(":", 1)[1].split(".", 1)[0] for s in sinks
            if s.startswith(("name:", "key:")) or (s.startswith("attr:") and not s.startswith("attr:self."))]


def _escapes(sinks: tuple) -> bool:
    return any(s.startswith("attr:self.") for s in sinks)


def _where(scope: str) -> str:
    return "the module's top level" if scope.startswith("<") else scope


def _line(facts: FileFacts, node: int) -> int:
    return facts.spans[node].line if 0 <= node < len(facts.spans) else 0
