"""Where a model file computes an operation, and in which form: the table `[operations]` of
knowledge/fused_ops.toml applied to one parsed module.

The engine's one-pass facts know calls and their arguments but not the expressions around them
(`F.silu(a) * b`, `torch.rsqrt(x.pow(2).mean(-1) + eps)`), so this walks the module's CST once
more; `acclint diff` reads two sides, not a whole project, so the second walk is cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

import libcst as cst

from acclint.knowledge import table
from acclint.linter.facts import NOT_LITERAL
from acclint.linter.names import resolve
from acclint.linter.walker import dotted_name, literal

ABSENT = "absent"
UPCAST = "upcast"  # the token of `.float()`, `.to(torch.float32)`, `ops.cast(x, mstype.float32)`
# How far a local name is followed to what its function assigned it (`var = x.pow(2).mean(-1)`).
FOLLOW_DEPTH = 3
_OPERATORS = {
    cst.Multiply: "*", cst.MatrixMultiply: "@", cst.Subtract: "-", cst.Add: "+", cst.Divide: "/",
    cst.Power: "**",
}


@dataclass(frozen=True)
class Form:
    operation: str
    form: str
    label: str
    calls: frozenset
    operand: str = ""
    inside: tuple = ()  # frozensets: each must meet the arguments' tokens
    outside: frozenset = frozenset()
    arg: str = ""
    position: Optional[int] = None
    values: tuple = ()
    note: str = ""


@dataclass(frozen=True)
class Anchor:
    """A call that computes `form`, in `scope` (the enclosing class, else function)."""

    node: cst.Call
    form: Form
    scope: str
    # For a composed form of an operation model_values.toml `[casts]` lists: whether its input is
    # upcast to fp32/fp64 first (else None).
    upcast: Optional[bool] = None


@lru_cache(maxsize=1)
def operations() -> dict:
    return table("fused_ops")["operations"]


@lru_cache(maxsize=1)
def casts() -> dict:
    return table("model_values")["casts"]


@lru_cache(maxsize=1)
def forms() -> tuple:
    out = []
    for name, operation in operations().items():
        for entry in operation["forms"]:
            out.append(Form(
                operation=name, form=entry["form"], label=entry["label"], calls=frozenset(entry["calls"]),
                operand=entry.get("operand", ""),
                inside=tuple(frozenset(group.split("|")) for group in entry.get("inside", ())),
                outside=frozenset(token for group in entry.get("outside", ()) for token in group.split("|")),
                arg=entry.get("arg", ""), position=entry.get("position"), values=tuple(entry.get("values", ())),
                note=entry.get("note", ""),
            ))
    return tuple(out)


def find_forms(module: cst.Module, bindings: dict) -> list[Anchor]:
    """Every anchor call of a form in `module`, in source order."""
    finder = _Finder(bindings)
    module.visit(finder)
    anchors = []
    for call, scope, direct, where, operator in finder.calls:
        followed = finder.built(call.func, where)
        tokens = _once(lambda call=call, where=where: finder.argument_tokens(call, where))
        for form in forms():
            if _matches(form, call, direct, followed, operator, tokens):
                anchors.append(Anchor(call, form, scope, _upcast(form, call, tokens, finder, where)))
    return anchors


def _upcast(form: Form, call: cst.Call, tokens, finder: "_Finder", where: tuple) -> Optional[bool]:
    table_ = casts()
    if form.form != "composed" or form.operation not in table_["operations"]:
        return None
    keywords = set(table_["keywords"])
    own = any(arg.keyword is not None and arg.keyword.value in keywords and _is_wide(arg.value) for arg in call.args)
    return own or UPCAST in tokens() or _callers_upcast(finder, where)


def _callers_upcast(finder: "_Finder", where: tuple) -> bool:
    """A helper whose caller upcasts what it passes (`self._norm(x.float())` into
    `def _norm(self, x): return x * torch.rsqrt(...)`): one call level, in the same class or module."""
    function, owner = where
    name = function.rsplit(".", 1)[-1]
    wanted = f"self.{name}" if owner else name
    return any(dotted_name(call.func) == wanted and caller[1] == owner
               and UPCAST in finder.argument_tokens(call, caller)
               for call, _, _, caller, _ in finder.calls)


def _is_wide(node: cst.BaseExpression) -> bool:
    """`torch.float32`, `mstype.float32`, `torch.float`: a dtype of 32 bits or more."""
    dotted = dotted_name(node)
    return bool(dotted) and "." in dotted and dotted.rsplit(".", 1)[-1] in casts()["dtypes"]


def is_upcast(call: cst.Call, names: frozenset) -> bool:
    """`x.float()`, `x.to(torch.float32)`, `x.type(torch.float64)`, `ops.cast(x, mstype.float32)`."""
    table_ = casts()
    if names & set(table_["methods"]):
        return True
    if names & set(table_["dtype_methods"]) or names & set(table_["dtype_calls"]):
        return any(_is_wide(arg.value) for arg in call.args)
    return False


def _once(compute):
    """`compute()` on the first call, its result after: arguments are read only for a likely anchor."""
    done: list = []

    def value():
        if not done:
            done.append(compute())
        return done[0]

    return value


def _matches(form: Form, call: cst.Call, direct: frozenset, followed: frozenset, operator: str, tokens) -> bool:
    # A module built elsewhere (`self.act = nn.GELU(...)`) carries its arguments there, not here.
    names = direct if form.arg else direct | followed
    if not names & form.calls:
        return False
    if form.operand and operator != form.operand:
        return False
    if form.arg and not _argument_is(call, form):
        return False
    if form.inside or form.outside:
        found = tokens()
        return all(group & found for group in form.inside) and not form.outside & found
    return True


def _argument_is(call: cst.Call, form: Form) -> bool:
    if any(arg.star for arg in call.args):  # `F.gelu(*args)`: whatever the caller passes
        return False
    value = _argument(call, form.arg, form.position)
    if value is None:
        return ABSENT in form.values
    found = literal(value)
    if found is None:  # `approximate=None` / `fused=None`: the default
        return ABSENT in form.values
    if found is NOT_LITERAL:
        return False
    return any(type(v) is type(found) and v == found for v in form.values)


def _argument(call: cst.Call, keyword: str, position: Optional[int]) -> Optional[cst.BaseExpression]:
    positional = []
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
        if arg.keyword is None and not arg.star:
            positional.append(arg.value)
    if position is not None and position < len(positional):
        return positional[position]
    return None


class _Finder(cst.CSTVisitor):
    """Collects every call with its names, the binary operator it is an operand of and its scope;
    and per function, what each local name is assigned (to follow names into arguments)."""

    def __init__(self, bindings: dict):
        super().__init__()
        self.bindings = bindings
        self.calls: list = []  # (call, scope, direct names, (function, class), operator)
        self.scopes: list = []  # (kind, name)
        self.assigned: dict = {}  # function key -> local name -> [value nodes]
        self.attributes: dict = {}  # (class, `self.x`) -> names of the calls assigned to it
        self.operand_of: dict = {}  # id(node) -> operator symbol

    # -- scopes --------------------------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scopes.append(("class", node.name.value))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.scopes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scopes.append(("def", node.name.value))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.scopes.pop()

    def _function(self) -> str:
        return ".".join(name for _, name in self.scopes)

    def _class(self) -> str:
        classes = [name for kind, name in self.scopes if kind == "class"]
        return classes[-1] if classes else ""

    def _scope(self) -> str:
        return self._class() or next((name for kind, name in self.scopes if kind == "def"), "<module>")

    # -- what is assigned ------------------------------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):  # `a, b = x.chunk(2)`: each is part of the value
            for element in target.elements:
                self._bind(element.value, value)
            return
        if isinstance(target, cst.Name):
            self.assigned.setdefault(self._function(), {}).setdefault(target.value, []).append(value)
            return
        dotted = dotted_name(target)
        if not (dotted and dotted.startswith("self.") and dotted.count(".") == 1):
            return
        # `self.act = nn.SiLU()`, or a table lookup `self.act = ACT2FN[config.hidden_act]`.
        built = value.func if isinstance(value, cst.Call) else value.value if isinstance(value, cst.Subscript) else None
        if built is not None:
            self.attributes.setdefault((self._class(), dotted[5:]), set()).update(self._names(built))

    # -- calls and operators ----------------------------------------------------------------------
    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        symbol = _OPERATORS.get(type(node.operator))
        if symbol is not None:
            self.operand_of[id(node.left)] = symbol
            self.operand_of[id(node.right)] = symbol

    def visit_Call(self, node: cst.Call) -> None:
        where = (self._function(), self._class())
        self.calls.append((node, self._scope(), self._names(node.func), where, self.operand_of.get(id(node), "")))

    def built(self, func: cst.BaseExpression, where: tuple) -> frozenset:
        """`self.act(x)`: the names of what `self.act` was built from in its class (read once every
        method has been walked, so `forward` before `__init__` is no matter)."""
        dotted = dotted_name(func)
        if dotted and dotted.startswith("self.") and dotted.count(".") == 1:
            return frozenset(self.attributes.get((where[1], dotted[5:]), ()))
        return frozenset()

    def _names(self, func: cst.BaseExpression, methods: bool = False) -> frozenset:
        """The callee's qualified names; else (a method of a local, a local function) `.name` (its
        last part) and, for a bare name, the name. `np.sqrt` is numpy's, never a tensor's `.sqrt`.
        `methods`: `.name` for a resolved callee too (`torch.mean` is a mean inside an argument)."""
        dotted = dotted_name(func)
        if dotted is None:
            return frozenset({"." + func.attr.value}) if isinstance(func, cst.Attribute) else frozenset()
        names = set(resolve(dotted, self.bindings))
        if methods or not names:
            names.add("." + dotted.rsplit(".", 1)[-1])
        if "." not in dotted and not names - {"." + dotted}:
            names.add(dotted)
        return frozenset(names)

    # -- the tokens of a call's arguments ------------------------------------------------------------
    def argument_tokens(self, call: cst.Call, where: tuple) -> frozenset:
        tokens: set = set()
        for arg in call.args:
            self.collect(arg.value, tokens, where, FOLLOW_DEPTH, set())
        return frozenset(tokens)

    def collect(self, node: cst.CSTNode, tokens: set, where: tuple, depth: int, seen: set,
                outer: bool = True) -> None:
        """Tokens of `node` into `tokens`, following the local names it reads `depth` assignments deep.
        `outer`: not inside the check of a subtraction (which follows one assignment, once)."""
        collector = _Tokens(self, tokens, where, outer)
        node.visit(collector)
        if depth == 0:
            return
        locals_ = self.assigned.get(where[0], {})
        for name in collector.names - seen:
            seen.add(name)
            for value in locals_.get(name, ()):
                self.collect(value, tokens, where, depth - 1, seen, outer)


class _Tokens(cst.CSTVisitor):
    """Calls (`_Finder._names`), operators and the local names read in one expression; `-mean` for
    a subtraction of a mean (`x - mean`: centring, what a LayerNorm does and an RMSNorm does not)."""

    def __init__(self, finder: _Finder, tokens: set, where: tuple, outer: bool = True):
        super().__init__()
        self.finder = finder
        self.tokens = tokens
        self.where = where  # (function, class) the expression is read in
        self.names: set = set()
        # A subtraction inside what a subtraction's check followed is read without following:
        # `a = a - b` chains would otherwise follow each other without end.
        self.outer = outer

    def visit_Call(self, node: cst.Call) -> None:
        names = self.finder._names(node.func, methods=True) | self.finder.built(node.func, self.where)
        self.tokens.update(names)  # `self.bmm(...)` with `self.bmm = ops.BatchMatMul()` is a BatchMatMul
        if is_upcast(node, names):
            self.tokens.add(UPCAST)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        symbol = _OPERATORS.get(type(node.operator))
        if symbol is not None:
            self.tokens.add(symbol)
        if symbol == "-":
            subtracted: set = set()
            self.finder.collect(node.right, subtracted, self.where, 1 if self.outer else 0, set(), outer=False)
            if ".mean" in subtracted:
                self.tokens.add("-mean")

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if isinstance(node.value, cst.Name):
            # `x.pow(2)` reads the local `x` (followed to `x = x.float()`); `self.eps` and
            # `torch.float32` name no local of the function, so following them finds nothing.
            self.names.add(node.value.value)
            return False
        return True

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)
