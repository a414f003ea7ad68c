"""The one pass over a parsed Python file: records imports, calls, settings and definitions as facts.

The walk is iterative and visits only fields that can hold code (no whitespace, commas or
parentheses), which makes it a small fraction of the parse itself. Qualified names are resolved
after the walk from the complete import table, so a use before its import still resolves.
"""

from __future__ import annotations

import ast
import dataclasses
from functools import lru_cache
from typing import Any, Optional

import libcst as cst

from acclint.linter import facts as F
from acclint.linter.class_values import record_class_calls
from acclint.linter.names import bind_aliases, resolve

_SKIPPED_FIELDS = frozenset(
    {
        "lpar", "rpar", "comma", "semicolon", "leading_lines", "lines_after_decorators",
        "trailing_whitespace", "header", "footer", "newline", "colon", "equal", "dot", "operator",
        "star", "asynchronous", "indent", "whitespace_before_colon", "whitespace_after_colon",
    }
)
# Values of `NAME = ...` worth recording as constants (`LR = 3e-4`, `BETAS = (0.9, 0.95)`).
_CONSTANT_NODES = (cst.Integer, cst.Float, cst.SimpleString, cst.UnaryOperation, cst.Tuple, cst.List)
_LEAVES = (cst.Name, cst.SimpleString, cst.Integer, cst.Float, cst.Imaginary, cst.Ellipsis)
_FIELDS: dict = {}
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def _code_fields(node_type: type) -> tuple:
    fields = _FIELDS.get(node_type)
    if fields is None:
        if issubclass(node_type, _LEAVES):
            fields = ()
        else:
            # Last field first: pushed on a stack, the first field (an `if`'s body before its
            # `else`) then comes off first, so facts keep source order.
            fields = tuple(
                f.name
                for f in reversed(dataclasses.fields(node_type))
                if f.name not in _SKIPPED_FIELDS and not f.name.startswith("whitespace")
            )
        _FIELDS[node_type] = fields
    return fields


_NODE_KINDS: dict = {}  # type -> is it a CST node (libcst's node classes are ABCs: isinstance is slow)


def _is_node(kind: type) -> bool:
    known = _NODE_KINDS.get(kind)
    if known is None:
        known = _NODE_KINDS[kind] = issubclass(kind, cst.CSTNode)
    return known


def dotted_name(node: cst.CSTNode) -> Optional[str]:
    """`a.b.c` for a chain of names, else None."""
    parts = []
    while type(node) is cst.Attribute:  # `type() is`: libcst's node classes are ABCs, isinstance is slow
        parts.append(node.attr.value)
        node = node.value
    if type(node) is cst.Name:
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def callee_text(node: cst.CSTNode) -> str:
    """Dotted text of a call's target; a method on an expression is `?.method`, on `super()` `super().method`."""
    dotted = dotted_name(node)
    if dotted is not None:
        return dotted
    if isinstance(node, cst.Attribute):
        inner = node.value
        if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name) and inner.func.value == "super":
            return "super()." + node.attr.value  # the base class's method: the project model follows it
        return "?." + node.attr.value
    return "?"


_NAMED_CONSTANTS = {"True": True, "False": False, "None": None}


def literal(node: cst.CSTNode) -> Any:
    """The Python value of a literal expression, or NOT_LITERAL."""
    kind = type(node)
    if kind is cst.Integer or kind is cst.Float or kind is cst.SimpleString:
        return _literal_text(node.value)
    if kind is cst.Name:
        return _NAMED_CONSTANTS.get(node.value, F.NOT_LITERAL)
    if kind is cst.UnaryOperation and type(node.operator) is cst.Minus:
        inner = literal(node.expression)
        return -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) else F.NOT_LITERAL
    if kind is cst.ConcatenatedString:
        left, right = literal(node.left), literal(node.right)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
        return F.NOT_LITERAL
    if kind is cst.Tuple or kind is cst.List:
        items = [literal(e.value) for e in node.elements if type(e) is cst.Element]
        if len(items) != len(node.elements) or any(i is F.NOT_LITERAL for i in items):
            return F.NOT_LITERAL
        return tuple(items) if kind is cst.Tuple else items
    if kind is cst.Dict:
        out = {}
        for element in node.elements:
            if type(element) is not cst.DictElement:
                return F.NOT_LITERAL
            key, value = literal(element.key), literal(element.value)
            if key is F.NOT_LITERAL or value is F.NOT_LITERAL:
                return F.NOT_LITERAL
            out[key] = value
        return out
    return F.NOT_LITERAL


def summarise_chain(node: cst.CSTNode, calls: Optional[list] = None) -> tuple:
    """(base node, chain) of `base.m1(...).m2[...]`: methods/attributes in application order. With
    `calls`, also the Call node of each chain element (None for attributes), in the same order."""
    chain = []
    nodes = [] if calls is not None else None
    while True:
        kind = type(node)
        if kind is cst.Call and type(node.func) is cst.Attribute and dotted_name(node.func) is None:
            chain.append(node.func.attr.value)
            if nodes is not None:
                nodes.append(node)
            node = node.func.value
        elif kind is cst.Attribute and dotted_name(node) is None:
            chain.append(node.attr.value)
            node = node.value
        elif kind is cst.Subscript:
            chain.append("[]")
            node = node.value
        elif kind is cst.UnaryOperation and type(node.operator) is cst.BitInvert:
            chain.append("~")
            node = node.expression
        else:
            chain.reverse()
            if nodes is not None:
                nodes.extend([None] * (len(chain) - len(nodes)))  # attributes, subscripts, `~`
                calls.extend(reversed(nodes))
            return node, tuple(chain)
        if nodes is not None and len(nodes) < len(chain):
            nodes.append(None)


_CONDITIONS = (cst.Comparison, cst.BooleanOperation, cst.IfExp, cst.UnaryOperation)
_ARITHMETIC = {cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/", cst.MatrixMultiply: "@",
               cst.Power: "**"}
_COMPARISONS = {cst.Equal: "==", cst.NotEqual: "!=", cst.LessThan: "<", cst.LessThanEqual: "<=",
                cst.GreaterThan: ">", cst.GreaterThanEqual: ">="}


def mentions(node: cst.CSTNode, depth: int = 0) -> frozenset:
    """String literals and dotted names (callees included) a condition mentions; bounded depth."""
    found: set = set()
    _collect_mentions(node, found, depth)
    return frozenset(found)


def _collect_mentions(node: cst.CSTNode, found: set, depth: int) -> None:
    if depth > 6:
        return
    kind = type(node)
    if kind is cst.SimpleString:
        text = literal(node)
        if isinstance(text, str):
            found.add(text)
        return
    dotted = dotted_name(node)
    if dotted is not None:
        found.add(dotted)
        return
    children = _MENTION_CHILDREN.get(kind)
    if children is not None:
        for child in children(node):
            _collect_mentions(child, found, depth + 1)


# Where a condition's parts are: comparisons, and/or/not, `a if c else b`, calls and attributes.
_MENTION_CHILDREN = {
    cst.Comparison: lambda n: (n.left, *(target.comparator for target in n.comparisons)),
    cst.BooleanOperation: lambda n: (n.left, n.right),
    cst.UnaryOperation: lambda n: (n.expression,),
    cst.IfExp: lambda n: (n.test, n.body, n.orelse),
    cst.Call: lambda n: (n.func, *(arg.value for arg in n.args)),
    cst.Attribute: lambda n: (n.value,),
}

def param_groups(node) -> Optional[F.ParamGroups]:
    """The literal entries of each dict in a list of dicts with string keys, else None."""
    groups, keys = [], []
    for element in node.elements:
        value = element.value if isinstance(element, cst.Element) else None
        if not isinstance(value, cst.Dict):
            return None
        entries, written = {}, set()
        for item in value.elements:
            if not isinstance(item, cst.DictElement):
                continue
            key, found = literal(item.key), literal(item.value)
            if isinstance(key, str):
                written.add(key)
                if found is not F.NOT_LITERAL:
                    entries[key] = found
        groups.append(entries)
        keys.append(frozenset(written))
    if not groups:
        return None
    found_groups = F.ParamGroups(groups)
    found_groups.keys = tuple(keys)
    return found_groups


@lru_cache(maxsize=8192)
def _literal_text(text: str) -> Any:
    """The value of one number or string token. Parsed here rather than by `ast.literal_eval`, whose
    recursive inner functions leave a reference cycle per call: garbage only the cyclic collector
    frees, which walks every file's facts to find it (workers.py)."""
    try:
        node = ast.parse(text, mode="eval").body
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return F.NOT_LITERAL
    return node.value if type(node) is ast.Constant else F.NOT_LITERAL


def _is_main_guard(test: cst.BaseExpression) -> bool:
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    if not isinstance(target.operator, cst.Equal):
        return False
    sides = (test.left, target.comparator)
    names = [s for s in sides if isinstance(s, cst.Name) and s.value == "__name__"]
    strings = [s for s in sides if isinstance(s, cst.SimpleString) and literal(s) == "__main__"]
    return bool(names and strings)


def _compared_literal(node: cst.BaseExpression) -> Optional[str]:
    """`"True"`, `1`, `True` as a launch flag would spell them; None for anything else."""
    if isinstance(node, cst.SimpleString):
        value = literal(node)
        return value if isinstance(value, str) else None
    if isinstance(node, cst.Integer):
        return node.value
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value
    return None


def _lookup(node: cst.BaseExpression) -> Optional[tuple]:
    """(dotted key, default) of `cfg.get("amp", False)` / `getattr(cfg, "amp", False)`; the default is
    None when not written (what both return then), NOT_LITERAL when it is code."""
    if type(node) is not cst.Call or node.args and any(a.star or a.keyword for a in node.args):
        return None
    func, args = node.func, node.args
    if type(func) is cst.Attribute and func.attr.value == "get" and 1 <= len(args) <= 2:
        receiver, key, rest = dotted_name(func.value), literal(args[0].value), args[1:]
    elif type(func) is cst.Name and func.value == "getattr" and len(args) == 3:
        receiver, key, rest = dotted_name(args[0].value), literal(args[1].value), args[2:]
    else:
        return None
    if not receiver or not isinstance(key, str) or not key.isidentifier():
        return None
    return f"{receiver}.{key}", literal(rest[0].value) if rest else None


def _flag_guards(test: cst.BaseExpression, node_of=None) -> tuple:
    """(flag guards of the body, of the else branch) for a test on a plain name, or on a config lookup
    with a default (`cfg.get("amp", False)`; `node_of` registers its node, where the default is written)."""
    kind = type(test)
    if kind is cst.Name or kind is cst.Attribute:
        dotted = dotted_name(test)
        return ((F.FlagGuard(dotted, "truthy"),), ()) if dotted else ((), ())
    if kind is cst.Call:
        found = _lookup(test)
        prefix = _startswith(test) if found is None else None
        if prefix is not None:
            return (F.FlagGuard(prefix[0], "prefix", prefix[1]),), (F.FlagGuard(prefix[0], "no-prefix", prefix[1]),)
        if found is None:
            return (), ()
        node = node_of(test) if node_of is not None else -1
        return (F.FlagGuard(found[0], "truthy", fallback=found[1], node=node),), ()
    if kind is cst.UnaryOperation and isinstance(test.operator, cst.Not):
        body, orelse = _flag_guards(test.expression, node_of)
        return orelse, body
    if kind is cst.Comparison and len(test.comparisons) == 1:
        target = test.comparisons[0]
        dotted = dotted_name(test.left)
        if dotted and isinstance(target.comparator, cst.Name) and target.comparator.value == "None":
            guard = (F.FlagGuard(dotted, "not-none"),)
            if isinstance(target.operator, (cst.IsNot, cst.NotEqual)):
                return guard, ()
            if isinstance(target.operator, (cst.Is, cst.Equal)):
                return (), guard
        compared = _compared_literal(target.comparator)
        if dotted and compared is not None and isinstance(target.operator, (cst.Equal, cst.NotEqual)):
            equals, differs = (F.FlagGuard(dotted, "equals", compared),), (F.FlagGuard(dotted, "differs", compared),)
            return (equals, differs) if isinstance(target.operator, cst.Equal) else (differs, equals)
        number = literal(target.comparator)
        order = _ORDERS.get(type(target.operator))
        if dotted and order and isinstance(number, (int, float)) and not isinstance(number, bool):
            return (F.FlagGuard(dotted, order[0], number),), (F.FlagGuard(dotted, order[1], number),)
        return (), ()
    if kind is cst.BooleanOperation:
        left, right = _flag_guards(test.left, node_of), _flag_guards(test.right, node_of)
        if isinstance(test.operator, cst.And):
            return left[0] + right[0], ()
        # `a or b`: the body runs when either side holds (known only when both sides are), the else when neither.
        if not (left[0] and right[0]):
            return (), left[1] + right[1]
        sides = tuple(side for found in (left[0], right[0])
                      for side in (found[0].value if len(found) == 1 and found[0].form == "any" else (found,)))
        either = F.FlagGuard("", "any", sides)
        return (F.FlagGuard(f"({either.text()})", "any", sides),), left[1] + right[1]
    return (), ()


# A number compared: the body's form and the else's (`x > 0` is false exactly when `x <= 0`).
_ORDERS = {cst.GreaterThan: ("gt", "le"), cst.GreaterThanEqual: ("ge", "lt"), cst.LessThan: ("lt", "ge"),
           cst.LessThanEqual: ("le", "gt")}


def _startswith(test: cst.BaseExpression) -> Optional[tuple]:
    """(dotted name, prefix) of `name.startswith("rand")`."""
    if type(test) is not cst.Call or type(test.func) is not cst.Attribute or test.func.attr.value != "startswith":
        return None
    if len(test.args) != 1 or test.args[0].keyword or test.args[0].star:
        return None
    dotted, prefix = dotted_name(test.func.value), literal(test.args[0].value)
    return (dotted, prefix) if dotted and isinstance(prefix, str) else None


def _scoped(guards: tuple, scope: str) -> tuple:
    """The guards, marked with the function their test is written in."""
    return tuple(dataclasses.replace(guard, scope=scope) for guard in guards)




def _catches_import_error(node: cst.Try) -> bool:
    for handler in node.handlers:
        if handler.type is None:
            return True
        kinds = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
        for kind in kinds:
            expr = kind.value if isinstance(kind, cst.Element) else kind
            name = dotted_name(expr) or ""
            if name.rsplit(".", 1)[-1] in _IMPORT_ERRORS:
                return True
    return False


@dataclasses.dataclass(frozen=True)
class _State:
    scope: str = F.MODULE_SCOPE
    owner: Optional[str] = None  # class whose body we are in
    in_main: bool = False
    in_fallback: bool = False
    in_handler: bool = False  # inside an `except` body
    in_loop: bool = False
    guard: Optional[F.Guard] = None
    flag_guards: tuple = ()  # F.FlagGuards of the enclosing `if`s (reset at each function)
    sinks: tuple = ()  # where the expression being walked flows (F.Sink), outermost first


def _changed(state: _State, **changes) -> _State:
    """`dataclasses.replace` without its per-call field checks: the walk makes a state per call
    argument and per branch, and replace's generic path was a tenth of the walk."""
    new = object.__new__(_State)
    fields = new.__dict__
    fields.update(state.__dict__)
    fields.update(changes)
    return new




class FileWalker:
    """Walks one module once and returns its FileFacts (names unresolved until `finish`)."""

    def __init__(self, module: cst.Module, facts: F.FileFacts):
        self.module = module
        self.facts = facts
        self.nodes: list = []  # node index -> CST node, for positions
        self.order = 0
        self.aliases: list = []  # (name, dotted) from `name = dotted.name`
        self.environ_subscripts: list = []  # (EnvWrite, base dotted, value node): os.environ or a dict
        self.value_nodes: list = []  # Values whose names resolve after the walk
        self.references: list = []  # F.Reference candidates: bare names used as values
        self.tests: dict = {}  # (scope, name) -> guards of each test it is assigned (`active = args.a > 0`)
        self.rebound: set = set()  # (scope, name) bound other than by `=` (`+=`, a loop target)
        self.tracked: set = set()  # (scope, name) of locals assigned a file listing: their reads are recorded
        # id(cst.Call) -> [(Value, chain index or -1 for its base)]: Values whose calls' arguments are filled
        # in when the walk reaches those calls (their Args are summarised once, there).
        self.pending_args: dict = {}
        # Module-level dicts of classes (`NORMS = {"ln": nn.LayerNorm}`): name -> [(Value, node)].
        self.class_tables: dict = {}

    # -- bookkeeping -------------------------------------------------------------------------
    def _node(self, node: cst.CSTNode) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def _next_order(self) -> int:
        self.order += 1
        return self.order

    def _value(self, node: cst.CSTNode, depth: int = 0) -> F.Value:
        value = F.Value(literal=literal(node), dotted=dotted_name(node))
        if value.dotted:
            value.base = value.dotted
            self.value_nodes.append(value)
        elif type(node) in _CONDITIONS and not (
                type(node) is cst.UnaryOperation and type(node.operator) is not cst.Not):
            value.mentions = mentions(node)
            if type(node) is cst.IfExp:
                value.choices = (literal(node.body), literal(node.orelse))
            elif type(node) is cst.Comparison or (type(node) is cst.BooleanOperation and type(node.operator) is cst.Or):
                self._operation(value, node, depth)
        elif value.literal is F.NOT_LITERAL:
            self._chain_into(value, node, depth)
        return value

    def _chain_into(self, value: F.Value, node: cst.CSTNode, depth: int = 0) -> None:
        calls: list = []
        base, chain = summarise_chain(node, calls)
        value.chain = chain
        if any(calls):
            value.chain_args = [()] * len(chain)
            for index, call in enumerate(calls):
                if call is not None:
                    self.pending_args.setdefault(id(call), []).append((value, index))
        kind = type(base)
        if kind is cst.Call:
            callee = dotted_name(base.func)
            value.base, value.base_call = callee, callee is not None
            self.pending_args.setdefault(id(base), []).append((value, -1))
        elif kind is cst.BinaryOperation or kind is cst.Comparison or kind is cst.UnaryOperation:
            self._operation(value, base, depth)
        else:
            value.base = dotted_name(base)
        if value.base:
            self.value_nodes.append(value)

    def _operation(self, value: F.Value, node: cst.CSTNode, depth: int) -> None:
        """`value.op`/`operands` for arithmetic, a single comparison, a unary minus or `a or b` (bounded depth)."""
        if depth > 3:
            return
        kind = type(node)
        if kind is cst.BinaryOperation:
            op = _ARITHMETIC.get(type(node.operator))
            operands = (node.left, node.right)
        elif kind is cst.Comparison and len(node.comparisons) == 1:
            op = _COMPARISONS.get(type(node.comparisons[0].operator))
            operands = (node.left, node.comparisons[0].comparator)
        elif kind is cst.UnaryOperation and type(node.operator) is cst.Minus:
            op, operands = "neg", (node.expression,)
        elif kind is cst.BooleanOperation and type(node.operator) is cst.Or:  # `norm_layer or nn.LayerNorm`
            op, operands = "or", (node.left, node.right)
        else:
            return
        if op is not None:
            value.op = op
            value.operands = tuple(self._value(operand, depth + 1) for operand in operands)

    # -- the walk ----------------------------------------------------------------------------
    def run(self) -> F.FileFacts:
        state = _State()
        stack: list = [self.module]
        handlers = _HANDLERS
        push, extend, pop = stack.append, stack.extend, stack.pop
        # The loop runs once per node of the module: the per-kind tables are read inline, with a
        # function call only the first time a kind is met.
        known_fields, known_nodes = _FIELDS, _NODE_KINDS
        while stack:
            item = pop()
            kind = type(item)
            if kind is _State:  # queued below a node's children: the state to walk on with once they are done
                state = item
                continue
            handler = handlers.get(kind)
            if handler is not None and handler(self, item, state, stack) is None:
                continue  # the handler queued the children itself
            fields = known_fields.get(kind)
            for name in fields if fields is not None else _code_fields(kind):
                child = getattr(item, name)
                child_kind = type(child)
                if child_kind is tuple or child_kind is list:
                    extend(reversed(child))
                elif known_nodes.get(child_kind) or (child_kind not in known_nodes and _is_node(child_kind)):
                    push(child)
            # Children sit above the next sibling on the stack, so order stays source order.
        self._finish()
        return self.facts

    def _children_in(self, node: cst.CSTNode, fields: tuple, state: _State, new: _State, stack: list) -> None:
        """Queue `fields` of node to be walked under `new`, then restore `state`."""
        stack.append(state)
        for name in reversed(fields):
            child = getattr(node, name)
            child_kind = type(child)
            if child_kind is tuple or child_kind is list:
                stack.extend(reversed(child))
            elif _is_node(child_kind):
                stack.append(child)
        stack.append(new)

    # -- handlers: return the state to walk children with, or None when they queued them ----
    def _assigned_call(self, item: "_AssignedCall", state: _State, stack: list):
        return self._call(item.call, state, stack, assigned_to=item.name)

    def _call(self, node: cst.Call, state: _State, stack: list, assigned_to: Optional[str] = None):
        args = tuple(
            F.Arg(
                keyword=arg.keyword.value if arg.keyword is not None else None,
                value=self._value(arg.value),
                star=arg.star if isinstance(arg.star, str) else "",
            )
            for arg in node.args
        )
        call = F.Call(
            node=self._node(node),
            callee=callee_text(node.func),
            args=args,
            scope=state.scope,
            order=self._next_order(),
            in_main=state.in_main,
            assigned_to=assigned_to,
            in_loop=state.in_loop,
            guard=state.guard,
            flag_guards=state.flag_guards,
            sinks=state.sinks,
            in_handler=state.in_handler,
        )
        waiting = self.pending_args.pop(id(node), None)
        if waiting is not None:
            for value, index in waiting:
                if index < 0:
                    value.base_args = args
                else:
                    value.chain_args[index] = args
        if state.sinks and call.method in _LISTING_METHODS:
            self._track(state)
        elif state.in_loop and call.method in _BUILDERS and type(node.func) is cst.Attribute \
                and type(node.func.value) is cst.Name:
            # `found.append(...)` in a loop: the list may be built from a listing the loop iterates.
            self.tracked.add((state.scope, node.func.value.value))
        if call.callee not in _NOT_CALLING:
            for arg in node.args:
                self._reference(arg.value, "arg:" + call.callee, state)
        if call.callee.startswith("?."):  # a method on an expression; `a.b.m()` keeps `a.b` in callee
            call.receiver = self._value(node.func.value)
        elif call.callee == "?":  # `handlers[name](...)`, `getattr(obj, name)(...)`: what is called
            call.receiver = self._value(node.func)
        self.facts.calls.append(call)
        if node.args and type(node.args[0].value) in (cst.List, cst.Tuple):
            groups = param_groups(node.args[0].value)
            if groups is not None:
                self.facts.param_groups[call.node] = groups
            else:
                self.facts.name_lists[call.node] = tuple(dotted_name(e.value) or "" for e in node.args[0].value.elements
                                                         if isinstance(e, cst.Element))
        # The arguments flow into this call; the callee expression does not.
        self._children_in(node, ("args",), state, _sunk(state, "arg:" + call.callee), stack)
        self._children_in(node, ("func",), state, state, stack)
        return None

    def _sunk_children(self, node, fields: tuple, state: _State, stack: list, sink: str) -> None:
        self._children_in(node, fields, state, _sunk(state, sink), stack)

    def _return(self, node: cst.Return, state: _State, stack: list):
        if node.value is not None and state.scope != F.MODULE_SCOPE:
            self.facts.returns.append(F.Return(state.scope, self._next_order(), self._value(node.value)))
        if node.value is not None:
            self._reference(node.value, "return", state)
        self._sunk_children(node, ("value",), state, stack, "return")
        return None

    def _subscript(self, node: cst.Subscript, state: _State, stack: list):
        for element in node.slice:
            if type(element.slice) is cst.Slice:  # `x[..., :n]`: a bound that cuts a dimension
                for bound in (element.slice.lower, element.slice.upper):
                    dotted = dotted_name(bound) if bound is not None else None
                    if dotted:
                        self.facts.slice_bounds.add(dotted)
        sink = _index_kind(node.slice)
        value = node.value
        if sink != "[]" and type(value) is cst.Attribute and type(value.value) is cst.Name \
                and value.value.value == "self":
            # `self.files[index]`: a stored list read by position, in whichever method does it.
            self.facts.name_uses.append(F.NameUse("self." + value.attr.value, state.scope, self._next_order(),
                                                  state.sinks + (sink,)))
        self._children_in(node, ("slice",), state, state, stack)
        self._sunk_children(node, ("value",), state, stack, sink)
        return None

    def _comparison(self, node: cst.Comparison, state: _State, stack: list):
        if any(type(t.operator) in (cst.In, cst.NotIn) for t in node.comparisons):
            self._sunk_children(node, ("left", "comparisons"), state, stack, "in")
            return None
        return state

    def _set_comp(self, node, state: _State, stack: list):
        fields = ("elt", "for_in") if type(node) is cst.SetComp else ("key", "value", "for_in")
        self._sunk_children(node, fields, state, stack, "set-comp")
        return None

    def _name(self, node: cst.Name, state: _State, stack: list):
        # A read that flows nowhere (a statement of its own, the receiver of a method) says nothing.
        if self.tracked and state.sinks and (state.scope, node.value) in self.tracked:
            self.facts.name_uses.append(F.NameUse(node.value, state.scope, self._next_order(), state.sinks))
            self._track(state)  # `train = files[:n]`: follow the copy too
        return None

    def _track(self, state: _State) -> None:
        self.tracked.update((state.scope, s[5:]) for s in state.sinks if s.startswith("name:"))

    def _block(self, node, kind: str, items: tuple, targets: tuple, state: _State) -> F.Block:
        block = F.Block(node=self._node(node), kind=kind, items=items, targets=targets, scope=state.scope,
                        start=self._next_order(), sinks=state.sinks)
        self.facts.blocks.append(block)
        return block

    def _with(self, node: cst.With, state: _State, stack: list):
        items = tuple(self._value(item.item) for item in node.items)
        targets = tuple(_bound_names(item.asname.name) for item in node.items if item.asname is not None)
        block = self._block(node, "with", items, sum(targets, ()), state)
        stack.append(_OrderMark(block, "end"))
        self._children_in(node, ("body",), state, state, stack)
        stack.append(_OrderMark(block, "head_end"))
        self._children_in(node, ("items",), state, state, stack)
        return None

    def _comp_for(self, node: cst.CompFor, state: _State, stack: list):
        self._block(node, "comp", (self._value(node.iter),), _bound_names(node.target), state)
        self._children_in(node, ("ifs", "inner_for_in"), state, state, stack)
        self._sunk_children(node, ("iter",), state, stack, "comp")
        self._children_in(node, ("target",), state, state, stack)
        return None

    def _order_mark(self, item: "_OrderMark", state: _State, stack: list):
        setattr(item.block, item.field, self._next_order())
        return None

    def _matmul(self, node: cst.BinaryOperation, state: _State, stack: list):
        """`a @ b` is recorded as a call of `@` with both operands (matmul checks read it)."""
        if type(node.operator) is cst.MatrixMultiply:
            self.facts.calls.append(F.Call(
                node=self._node(node), callee="@",
                args=(F.Arg(None, self._value(node.left)), F.Arg(None, self._value(node.right))),
                scope=state.scope, order=self._next_order(), in_main=state.in_main,
                in_loop=state.in_loop, guard=state.guard,
            ))
        elif type(node.operator) is cst.Divide:
            self._division(node, node.left, node.right, state)
        return state

    def _division(self, node, left, right, state: _State) -> None:
        """`a / name` (or `a /= name`): a normalisation rules can read; a literal divisor is arithmetic."""
        if dotted_name(right) is not None:
            self.facts.divisions.append(F.Division(node=self._node(node), left=self._value(left),
                                                   right=self._value(right), scope=state.scope,
                                                   order=self._next_order()))

    def _import(self, node: cst.Import, state: _State, stack: list):
        for alias in node.names:
            module = dotted_name(alias.name) or ""
            if alias.asname is not None:
                bound = dotted_name(alias.asname.name) or module
                self._bind(bound, module)
            else:
                bound = module.split(".", 1)[0]
                self._bind(bound, bound)
            self.facts.imports.append(F.Import(module, None, bound, state.scope, state.in_fallback))
        return None

    def _import_from(self, node: cst.ImportFrom, state: _State, stack: list):
        base = dotted_name(node.module) if node.module is not None else ""
        module = "." * len(node.relative) + (base or "")
        if isinstance(node.names, cst.ImportStar):
            self.facts.imports.append(F.Import(module, "*", "*", state.scope, state.in_fallback))
            return None
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            bound = dotted_name(alias.asname.name) if alias.asname is not None else name
            if not node.relative:
                self._bind(bound, f"{module}.{name}" if module else name)
            self.facts.imports.append(F.Import(module, name, bound, state.scope, state.in_fallback))
        return None

    def _bind(self, name: str, target: str) -> None:
        self.facts.bindings.setdefault(name, set()).add(target)

    def _assign(self, node, state: _State, stack: list):
        targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
        value = node.value
        if value is None:
            return state
        value_dotted = dotted_name(value)
        names = [t.value for t in targets if type(t) is cst.Name]
        for target in targets:
            if type(target) is cst.Tuple or type(target) is cst.List:  # `a, b = ...`: both rebound, value unknown
                names.extend(e.value.value for e in target.elements if type(e.value) is cst.Name)
        if len(targets) == 1 and type(targets[0]) is cst.Name and type(value) in _TESTS:
            guards = _scoped(_flag_guards(value, self._node)[0], state.scope)
            if guards:
                self.tests.setdefault((state.scope, targets[0].value), []).append(guards)
        if names:
            # Queued below the right side's nodes, so it is recorded (and ordered) after them.
            summary = self._value(value) if len(targets) == 1 and type(targets[0]) is cst.Name else F.Value()
            stack.append(_NameBinding(names, summary, state.scope))
        sink = None
        if len(targets) == 1 and type(targets[0]) in _TARGET_SINKS:
            target = targets[0].value if type(targets[0]) is cst.Subscript else targets[0]
            target_text = dotted_name(target)
            if target_text:
                sink = _TARGET_SINKS[type(targets[0])] + target_text
        value_state = _sunk(state, sink) if sink else state
        if sink and sink[0] != "k" and type(value) in _COLLECTIONS:  # `COMMANDS = {"train": run_train}`
            self._reference(value, sink, state)
        if type(value) is cst.Dict and names and state.scope == F.MODULE_SCOPE:
            self._class_table(node, names[0], value)
        for target in targets:
            if type(target) is cst.Name:
                if value_dotted is not None:
                    self.aliases.append((target.value, value_dotted))
                elif type(value) in _CONSTANT_NODES:
                    self._constant(node, target.value, value, state)
                if state.owner is not None and state.scope == state.owner:
                    self._field(state.owner, target.value, value)
            elif type(target) is cst.Attribute:
                self.facts.assignments.append(
                    F.Assignment(
                        node=self._node(node),
                        target=dotted_name(target) or callee_text(target),
                        value=self._value(value),
                        scope=state.scope,
                        order=self._next_order(),
                        in_main=state.in_main,
                        flag_guards=state.flag_guards,
                    )
                )
            elif type(target) is cst.Subscript and len(target.slice) == 1:
                self._subscript_write(node, target, value, state)
        stack.append(state)
        if type(value) is cst.Call and len(targets) == 1 and type(targets[0]) is cst.Name:
            # Walk the call knowing the name it is assigned to (`model = Net()`).
            stack.append(_AssignedCall(targets[0].value, value))
        else:
            stack.append(value)
        stack.append(value_state)
        self._children_in(node, ("targets",) if type(node) is cst.Assign else ("target",), state, state, stack)
        return None

    def _class_table(self, node, name: str, value: cst.Dict) -> None:
        """The dotted entries of a module-level dict: candidates for `NAME[key](...)` (linter.class_values)."""
        entries = [self._value(e.value) for e in value.elements
                   if type(e) is cst.DictElement and dotted_name(e.value) is not None]
        if entries:
            where = self._node(node)
            self.class_tables[name] = [(entry, where) for entry in entries]

    def _attribute(self, node: cst.Attribute, state: _State, stack: list):
        value = node.value
        if type(value) is cst.Name and value.value == "self":
            key = (state.scope, node.attr.value)
            uses = self.facts.self_attributes
            uses[key] = uses.get(key, 0) + 1
        return state

    def _aug_assign(self, node: cst.AugAssign, state: _State, stack: list):
        if type(node.operator) is cst.DivideAssign:  # `loss /= steps`
            self._division(node, node.target, node.value, state)
        if type(node.target) is cst.Name:  # `files += glob.glob(...)`
            self.rebound.add((state.scope, node.target.value))
            self._sunk_children(node, ("value",), state, stack, "name:" + node.target.value)
            return None
        return state

    def _field(self, owner: str, name: str, value: cst.BaseExpression) -> None:
        """A class-body default; `field(default=x)` (dataclasses, pydantic) counts as `x`."""
        if isinstance(value, cst.Call) and callee_text(value.func).rsplit(".", 1)[-1] in ("field", "Field"):
            default = next((a.value for a in value.args if a.keyword is not None and a.keyword.value == "default"),
                           None)
            if default is None:
                return
            value = default
        self.facts.classes[owner].fields[name] = self._value(value)

    def _constant(self, node, name: str, value, state: _State) -> None:
        found = literal(value)
        if found is F.NOT_LITERAL and isinstance(value, (cst.List, cst.Tuple)):
            found = param_groups(value) or F.NOT_LITERAL
        if found is not F.NOT_LITERAL:
            self.facts.constants[(state.scope, name)] = (found, self._node(node))

    def _subscript_write(self, node, target: cst.Subscript, value, state: _State) -> None:
        base = dotted_name(target.value)
        index = target.slice[0].slice
        key = literal(index.value) if isinstance(index, cst.Index) else F.NOT_LITERAL
        if base is None or not isinstance(key, str):
            return
        raw = literal(value)
        write = F.EnvWrite(
            node=self._node(node),
            name=key,
            value=raw if isinstance(raw, str) else None,
            scope=state.scope,
            order=self._next_order(),
            in_main=state.in_main,
            flag_guards=state.flag_guards,
        )
        self.environ_subscripts.append((write, base, value))

    def _function(self, node: cst.FunctionDef, state: _State, stack: list):
        qualname = node.name.value if state.scope == F.MODULE_SCOPE else f"{state.scope}.{node.name.value}"
        params = [p for group in (node.params.posonly_params, node.params.params, node.params.kwonly_params)
                  for p in group]
        self.facts.functions[qualname] = F.FunctionDef(
            node=self._node(node), qualname=qualname, owner=state.owner, order=self._next_order(),
            params=tuple(p.name.value for p in params),
            decorators=tuple(self._value(d.decorator) for d in node.decorators),
            defaults={p.name.value: self._value(p.default) for p in params if p.default is not None},
            annotations={p.name.value: self._value(p.annotation.annotation) for p in params
                         if p.annotation is not None},
        )
        inner = _changed(state, scope=qualname, owner=None, in_main=state.in_main,
                                    in_loop=False, guard=None, flag_guards=(), sinks=())
        # Decorators and defaults run in the enclosing scope; the body in the function's own.
        self._children_in(node, ("body",), state, inner, stack)
        self._children_in(node, ("decorators", "params", "returns"), state, state, stack)
        return None

    def _class(self, node: cst.ClassDef, state: _State, stack: list):
        qualname = node.name.value if state.scope == F.MODULE_SCOPE else f"{state.scope}.{node.name.value}"
        bases = tuple(self._value(arg.value) for arg in node.bases)
        self.facts.classes[qualname] = F.ClassDef(
            node=self._node(node), qualname=qualname, bases=bases, order=self._next_order(),
            decorators=tuple(self._value(d.decorator) for d in node.decorators),
        )
        inner = _changed(state, scope=qualname, owner=qualname, flag_guards=(), sinks=())
        self._children_in(node, ("body",), state, inner, stack)
        self._children_in(node, ("decorators", "bases", "keywords"), state, state, stack)
        return None

    def _if(self, node: cst.If, state: _State, stack: list):
        if state.scope == F.MODULE_SCOPE and not state.in_main and _is_main_guard(node.test):
            self.facts.main_guard = self._node(node.test)  # one line, not the whole block
            self._children_in(node, ("orelse",), state, state, stack)
            self._children_in(node, ("body",), state, _changed(state, in_main=True), stack)
            self._children_in(node, ("test",), state, state, stack)
            return None
        return self._guarded(node, state, stack)

    def _guarded(self, node, state: _State, stack: list):
        """`if`/`a if c else b`: the body runs under the test, the else side under its negation."""
        tested = mentions(node.test)
        body_flags, orelse_flags = (_scoped(found, state.scope) for found in _flag_guards(node.test, self._node))
        orelse = _changed(state, guard=F.Guard(tested, True), flag_guards=state.flag_guards + orelse_flags)
        body = _changed(state, guard=F.Guard(tested), flag_guards=state.flag_guards + body_flags)
        self._children_in(node, ("orelse",), state, orelse, stack)
        self._children_in(node, ("body",), state, body, stack)
        self._sunk_children(node, ("test",), state, stack, "test")
        return None

    def _short_circuit(self, node: cst.BooleanOperation, state: _State, stack: list):
        """`flag and draw()`: the right side runs only when the left is true, as an `if flag:` body would."""
        body_flags = _scoped(_flag_guards(node.left, self._node)[0], state.scope) if type(node.operator) is cst.And \
            else ()
        if not body_flags:
            return state
        self._children_in(node, ("right",), state, _changed(state, flag_guards=state.flag_guards + body_flags), stack)
        self._children_in(node, ("left",), state, state, stack)
        return None

    def _loop(self, node, state: _State, stack: list):
        block = None
        if type(node) is cst.For:
            block = self._block(node, "for", (self._value(node.iter),), _bound_names(node.target), state)
            stack.append(_OrderMark(block, "end"))
        self._children_in(node, ("orelse",), state, state, stack)
        self._children_in(node, ("body",), state, _changed(state, in_loop=True), stack)
        if block is None:
            self._children_in(node, ("test",), state, state, stack)
            return None
        stack.append(_OrderMark(block, "head_end"))
        if block.targets and _enumerates_listing(node.iter, self.tracked, state.scope):
            # `for i, name in enumerate(os.listdir(root))`: `i` numbers entries in file-system order.
            self.tracked.add((state.scope, block.targets[0]))
        self._sunk_children(node, ("iter",), state, stack, "iter")
        self._children_in(node, ("target",), state, state, stack)
        return None

    def _name_binding(self, item: "_NameBinding", state: _State, stack: list):
        order = self._next_order()
        for name in item.names:
            self.facts.name_assignments.append(F.NameAssignment(name, item.value, item.scope, order))
        return None

    def _except(self, node: cst.ExceptHandler, state: _State, stack: list):
        self._children_in(node, ("body",), state, _changed(state, in_handler=True), stack)
        self._children_in(node, ("type", "name"), state, state, stack)
        return None

    def _try(self, node: cst.Try, state: _State, stack: list):
        if not _catches_import_error(node):
            return state
        fallback = _changed(state, in_fallback=True)
        self._children_in(node, ("body", "handlers", "orelse", "finalbody"), state, fallback, stack)
        return None

    def _reference(self, node: cst.CSTNode, sink: str, state: _State) -> None:
        """A bare name passed, stored in a literal collection or returned; kept in `_finish` only if it
        names a function or class of this file or an imported name."""
        kind = type(node)
        if kind is cst.Name:
            self.references.append(F.Reference(node.value, state.scope, self._next_order(), state.in_main, sink,
                                               state.flag_guards))
        elif kind in _COLLECTIONS:
            for element in node.elements:
                if type(element) in (cst.Element, cst.DictElement):
                    self._reference(element.value, sink, state)

    # -- after the walk ----------------------------------------------------------------------
    def _finish(self) -> None:
        facts = self.facts
        facts.references = _callable_references(facts, self.references)
        loop_bound = {(block.scope, name) for block in facts.blocks for name in block.targets}
        facts.tests = _bound_tests(self.tests, self.rebound | loop_bound, facts.name_assignments)
        bind_aliases(facts.bindings, self.aliases)
        bindings = facts.bindings
        for call in facts.calls:
            call.names = resolve(call.callee, bindings)
        for assignment in facts.assignments:
            assignment.names = resolve(assignment.target, bindings)
        for value in self.value_nodes:
            if value.dotted:
                value.names = resolve(value.dotted, bindings)
            value.base_names = value.names if value.base == value.dotted else resolve(value.base, bindings)
            if value.base_call and not value.base_names and "." in value.base:
                # `x.t()` is a method of a local, not a function: base `x`, chain starts with `t`.
                value.base, method = value.base.rsplit(".", 1)
                value.base_call = False
                if value.base_args or value.chain_args:  # the call's arguments move along with it
                    value.chain_args = [value.base_args, *(value.chain_args or [()] * len(value.chain))]
                    value.base_args = ()
                value.chain = (method, *value.chain)
                value.base_names = resolve(value.base, bindings)
        for write, base, value in self.environ_subscripts:
            if "os.environ" in resolve(base, bindings):
                facts.env_writes.append(write)
            else:  # an options dict built key by key; its value summarised like any other
                summary = F.Value(literal=literal(value), dotted=dotted_name(value))
                if summary.dotted:
                    summary.names = resolve(summary.dotted, bindings)
                facts.key_writes.append(F.KeyWrite(write.node, base, write.name, summary, write.scope, write.order))
        facts.env_writes.extend(_env_writes_from_calls(facts.calls))
        facts.env_writes.sort(key=lambda w: w.order)
        record_class_calls(facts, self.class_tables)


# Plain functions, not bound methods: a walker holding its own bound methods would sit in a
# reference cycle and keep every parsed tree alive until a full garbage collection.
_HANDLERS = {
    cst.Call: FileWalker._call,
    cst.Import: FileWalker._import,
    cst.ImportFrom: FileWalker._import_from,
    cst.Assign: FileWalker._assign,
    cst.AnnAssign: FileWalker._assign,
    cst.FunctionDef: FileWalker._function,
    cst.ClassDef: FileWalker._class,
    cst.If: FileWalker._if,
    cst.IfExp: FileWalker._guarded,
    cst.BooleanOperation: FileWalker._short_circuit,
    cst.For: FileWalker._loop,
    cst.While: FileWalker._loop,
    cst.BinaryOperation: FileWalker._matmul,
    cst.Try: FileWalker._try,
    cst.ExceptHandler: FileWalker._except,
}


# Calls that take a function or class without calling it.
_NOT_CALLING = frozenset({"isinstance", "issubclass", "hasattr", "getattr", "setattr", "type", "id", "print",
                          "repr", "str", "len", "super", "callable", "vars", "dir"})
_COLLECTIONS = (cst.Dict, cst.List, cst.Tuple, cst.Set)


def _callable_references(facts: F.FileFacts, candidates: list) -> list:
    """The candidates that can name code: this file's functions and classes (module-level or nested
    in the referencing function), or a name imported with `from ... import name`."""
    imported = {imp.bound for imp in facts.imports if imp.name is not None and imp.name != "*"}
    defined = facts.functions.keys() | facts.classes.keys()
    return [r for r in candidates
            if r.name in imported or r.name in defined or f"{r.scope}.{r.name}" in defined]


def _sunk(state: _State, sink: str) -> _State:
    return _changed(state, sinks=state.sinks + (sink,))


def _index_kind(elements) -> str:
    """The Sink of a subscript: "[:]" a slice, "[]" one constant position (`[0]`, `[-1]`, `["key"]`),
    "[i]" a position computed at run time."""
    if len(elements) != 1:
        return "[i]"
    index = elements[0].slice
    if type(index) is cst.Slice:
        return "[:]"
    value = index.value
    if type(value) in (cst.Integer, cst.SimpleString) or (
            type(value) is cst.UnaryOperation and type(value.expression) is cst.Integer):
        return "[]"
    return "[i]"


def _enumerates_listing(node: cst.CSTNode, tracked: set, scope: str) -> bool:
    """`enumerate(os.walk(root))` or `enumerate(names)` where `names` holds a listing."""
    if type(node) is not cst.Call or type(node.func) is not cst.Name or node.func.value != "enumerate" \
            or not node.args:
        return False
    first = node.args[0].value
    if type(first) is cst.Name:
        return (scope, first.value) in tracked
    return type(first) is cst.Call and callee_text(first.func).rsplit(".", 1)[-1] in _LISTING_METHODS


# Expressions that are a test: a local bound to one may be an `if`'s condition (`if mixup_active:`).
_TESTS = frozenset({cst.Comparison, cst.BooleanOperation, cst.UnaryOperation, cst.Call})


def _bound_tests(tests: dict, rebound: set, assignments: list) -> dict:
    """(scope, name) -> guards, for a local bound exactly once, to a test: what `if name:` then asks."""
    bound: dict = {}
    for assignment in assignments:
        key = (assignment.scope, assignment.name)
        bound[key] = bound.get(key, 0) + 1
    return {key: found[0] for key, found in tests.items()
            if len(found) == 1 and bound.get(key) == 1 and key not in rebound}


def _bound_names(target: cst.CSTNode) -> tuple:
    """Names a `for`/`as` target binds: `x`, `a, (b, c)`."""
    if type(target) is cst.Name:
        return (target.value,)
    if type(target) in (cst.Tuple, cst.List):
        return sum((_bound_names(e.value) for e in target.elements), ())
    return ()


# Methods whose result is a directory listing in file-system order (os.listdir, glob.glob, Path.rglob,
# ...): reads of the locals they are assigned to are recorded (F.NameUse) so rules can follow them.
_LISTING_METHODS = frozenset({"listdir", "scandir", "glob", "iglob", "rglob", "iterdir", "walk"})
# Methods that build a list in a loop; the list is followed like a listing (it may be built from one).
_BUILDERS = frozenset({"append", "extend", "insert"})
# Assignment targets and the Sink of the value assigned to them.
_TARGET_SINKS = {cst.Name: "name:", cst.Attribute: "attr:", cst.Subscript: "key:"}


class _OrderMark:
    """Stamps the next order on a field of a Block when the walk reaches it (end of a header or body)."""

    __slots__ = ("block", "field")

    def __init__(self, block: F.Block, field: str):
        self.block = block
        self.field = field


class _NameBinding:
    """`name = value`, queued to be recorded once the right side has been walked."""

    __slots__ = ("names", "value", "scope")

    def __init__(self, names: list, value: F.Value, scope: str):
        self.names = names
        self.value = value
        self.scope = scope


class _AssignedCall:
    """A call on the right of `name = ...`, walked with the name attached."""

    __slots__ = ("name", "call")

    def __init__(self, name: str, call: cst.Call):
        self.name = name
        self.call = call


def _env_writes_from_calls(calls: list) -> list:
    writes = []
    for call in calls:
        if not call.names & _ENV_SETTERS:
            continue
        if call.names & {"os.environ.update"}:
            pairs = []
            first = call.arg("", 0)
            if first is not None and isinstance(first.value.literal, dict):
                pairs.extend(first.value.literal.items())
            pairs.extend((a.keyword, a.value.literal) for a in call.args if a.keyword)
        else:
            key, value = call.arg("key", 0), call.arg("value", 1)
            if key is None or not isinstance(key.value.literal, str):
                continue
            pairs = [(key.value.literal, value.value.literal if value is not None else None)]
        for name, value in pairs:
            writes.append(
                F.EnvWrite(
                    node=call.node,
                    name=str(name),
                    value=value if isinstance(value, str) else None,
                    scope=call.scope,
                    order=call.order,
                    in_main=call.in_main,
                    flag_guards=call.flag_guards,
                )
            )
    return writes


_ENV_SETTERS = frozenset({"os.environ.setdefault", "os.putenv", "os.environ.update"})


_HANDLERS[_NameBinding] = FileWalker._name_binding
_HANDLERS[_AssignedCall] = FileWalker._assigned_call
_HANDLERS[_OrderMark] = FileWalker._order_mark
_HANDLERS.update({
    cst.Return: FileWalker._return,
    cst.Subscript: FileWalker._subscript,
    cst.Comparison: FileWalker._comparison,
    cst.SetComp: FileWalker._set_comp,
    cst.DictComp: FileWalker._set_comp,  # keyed: `{name: path for ...}`
    cst.Name: FileWalker._name,
    cst.With: FileWalker._with,
    cst.CompFor: FileWalker._comp_for,
    cst.AugAssign: FileWalker._aug_assign,
    cst.Attribute: FileWalker._attribute,
})
