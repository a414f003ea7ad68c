"""What an attention mask means, followed through local assignments and local helpers' returns.

A mask is read as "keep" (true/1 where a position takes part, SDPA's boolean polarity), "drop" (true/1
where it is masked out, npu_fusion_attention's polarity) or "additive" (0 / a large negative number, added
to the scores). Conversions change the meaning: `additive.bool()` is True where masked ("drop"),
`additive == 0` / `logical_not` is True where kept ("keep"), `~keep` is "drop". Only what the code shows is
known: a parameter or an unknown call has no kind, and nothing is reported about it. The domain facts are
in knowledge/attention_masks.toml.
"""

from __future__ import annotations

import math
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Optional

from acclint.knowledge import table
from acclint.linter.facts import MODULE_SCOPE, Arg, FileFacts, FunctionDef, Value
from acclint.rules.flow import assigned_before

_DEPTH = 6


@dataclass(frozen=True)
class Kind:
    meaning: str  # keep | drop | additive | ones | zeros | neg
    boolean: Optional[bool]  # known to be a boolean tensor (True), a float one (False), or unknown
    how: str  # how it was built, for messages ("masked_fill(..., -inf)", "tril", "== 0")


@lru_cache(maxsize=1)
def masks() -> dict:
    return table("attention_masks")


def _names(key: str) -> frozenset:
    return frozenset(masks()[key])


_NEGATE = {"keep": "drop", "drop": "keep", "additive": "keep"}  # true where the value is 0
_NONZERO = {"keep": "keep", "drop": "drop", "additive": "drop"}  # true where the value is not 0


def kind_of(facts: FileFacts, value: Optional[Value], scope: str, order: int, depth: int = 0) -> Optional[Kind]:
    """The meaning of `value` as evaluated in `scope` just before `order`, or None when not known."""
    if value is None or depth > _DEPTH:
        return None
    chain = value.chain
    if value.op is not None:
        kind = _operation(facts, value, scope, order, depth)
    elif value.base_call:
        kind = _call(facts, value, scope, order, depth)
    elif value.base == "self" and chain and "." in scope:  # `self.helper(...)...`: a method of this class
        args = value.chain_args[0] if value.chain_args else ()
        kind = _helper(facts, f"{scope.rsplit('.', 1)[0]}.{chain[0]}", depth, CallSite(args, scope, order, facts))
        chain = chain[1:]
    elif value.base and "." not in value.base:
        kind = _name(facts, value.base, scope, order, depth)
    else:
        kind = None
    skipped = len(value.chain) - len(chain)
    for index, method in enumerate(chain, start=skipped):
        args = value.chain_args[index] if index < len(value.chain_args) else ()
        kind = _apply(facts, kind, method, args, scope, order, depth)
        if kind is None:
            return None
    return kind


def is_negative_constant(facts: FileFacts, value: Optional[Value], scope: str = "", order: int = 0,
                         depth: int = 0) -> bool:
    """A large negative number: -1e4, float("-inf"), -torch.inf, torch.finfo(dtype).min, or a name holding one."""
    if value is None or depth > _DEPTH:
        return False
    literal = value.literal
    if isinstance(literal, (int, float)) and not isinstance(literal, bool):
        return literal <= masks()["negative_at_most"]
    if value.base_call and value.base == "float" and value.base_args and not value.chain:
        text = value.base_args[0].value.literal
        return isinstance(text, str) and text.strip().lower() in ("-inf", "-infinity")
    if value.base_call and value.base_names & _names("finfo") and value.chain == ("min",):
        return True
    if value.op == "neg" and value.operands:
        inner = value.operands[0]
        return bool(inner.names & _names("inf_constants")) or (
            isinstance(inner.literal, float) and math.isinf(inner.literal)) or (
            inner.base_call and inner.base == "float" and bool(inner.base_args) and
            str(inner.base_args[0].value.literal).lower() in ("inf", "infinity"))
    if value.dotted and "." not in value.dotted and scope:
        held = assigned_before(facts, value.dotted, scope, order)
        return held is not None and is_negative_constant(facts, held[1], scope, held[0], depth + 1)
    return False


def _name(facts: FileFacts, name: str, scope: str, order: int, depth: int) -> Optional[Kind]:
    held = assigned_before(facts, name, scope, order)
    if held is None and scope != MODULE_SCOPE:
        function = facts.functions.get(scope)
        if function is not None and name in function.params:
            passed = _BOUND.get().get((facts.abspath, scope, name))  # what the caller passed, followed from there
            if passed is None:
                return None  # a parameter: whatever the caller passes
            return kind_of(passed[3], passed[0], passed[1], passed[2], depth + 1)
        scope, order = MODULE_SCOPE, math.inf  # a module-level constant, set when the module was imported
        held = assigned_before(facts, name, scope, order)
    if held is None:
        return None
    return kind_of(facts, held[1], scope, held[0], depth + 1)


def _boolean(args: tuple) -> Optional[bool]:
    for arg in args:
        if arg.keyword == "dtype":
            return bool(arg.value.names & _names("bool_dtypes"))
    return False  # torch.ones / zeros / full default to a float dtype


def _arg(args: tuple, keyword: str, position: int) -> Optional[Arg]:
    for arg in args:
        if arg.keyword == keyword:
            return arg
    positional = [a for a in args if a.keyword is None and not a.star]
    return positional[position] if position < len(positional) else None


def _call(facts: FileFacts, value: Value, scope: str, order: int, depth: int) -> Optional[Kind]:
    names, args = value.base_names, value.base_args
    if names & _names("ones"):
        return Kind("ones", _boolean(args), "ones")
    if names & _names("zeros"):
        return Kind("zeros", _boolean(args), "zeros")
    if names & _names("fills"):
        fill = _arg(args, "fill_value", 1)
        if fill is not None and is_negative_constant(facts, fill.value, scope, order, depth):
            return Kind("neg", False, "full(..., -inf)")
        return None
    if names & (_names("lower_triangle") | _names("upper_triangle")):
        first = _arg(args, "input", 0)
        source = kind_of(facts, first.value, scope, order, depth + 1) if first is not None else None
        return _triangle("tril" if names & _names("lower_triangle") else "triu", source, args)
    if names & _names("negations"):
        first = _arg(args, "input", 0)
        return _convert(kind_of(facts, first.value, scope, order, depth + 1) if first else None, _NEGATE, True,
                        "logical_not")
    if names & _names("wheres"):
        return _where(facts, args, scope, order, depth)
    return _helper(facts, value.base or "", depth, CallSite(args, scope, order, facts))


def _triangle(which: str, source: Optional[Kind], args: tuple) -> Optional[Kind]:
    """`tril` keeps the lower triangle (the causal "keep" mask); `triu(diagonal >= 1)` of ones is "drop",
    of a large negative fill the additive causal mask. Of an unknown tensor, `tril` still reads as "keep"."""
    diagonal = _arg(args, "diagonal", 1)
    offset = diagonal.value.literal if diagonal is not None else 0
    if not isinstance(offset, int) or isinstance(offset, bool):
        return None
    boolean = source.boolean if source is not None else None
    if which == "tril":
        if source is None or source.meaning == "ones":
            return Kind("keep", boolean, "tril") if offset >= 0 else None
        return None
    if offset < 1 or source is None:
        return None
    if source.meaning == "ones":
        return Kind("drop", boolean, "triu")
    if source.meaning == "neg":
        return Kind("additive", False, "triu of -inf")
    return None


def _where(facts: FileFacts, args: tuple, scope: str, order: int, depth: int) -> Optional[Kind]:
    """`torch.where(keep, 0.0, -inf)` / `torch.where(drop, -inf, 0.0)`: an additive mask."""
    if len(args) < 3:
        return None
    condition = kind_of(facts, args[0].value, scope, order, depth + 1)
    if condition is None:
        return None
    true_neg = is_negative_constant(facts, args[1].value, scope, order, depth)
    false_neg = is_negative_constant(facts, args[2].value, scope, order, depth)
    if true_neg == false_neg:
        return None
    masked_when = "drop" if true_neg else "keep"
    return Kind("additive", False, "where(..., -inf)") if condition.meaning == masked_when else None


@dataclass(frozen=True)
class CallSite:
    """The arguments a helper is called with, and where they are evaluated."""

    args: tuple
    scope: str
    order: int
    facts: FileFacts


# (helper's file, scope, parameter) -> (the caller's Value, its scope, its order, its file) while a helper's
# returns are read from one call: a helper that converts the mask it is given (`return ~mask.bool()`) means
# what its argument means, converted.
_BOUND: ContextVar[dict] = ContextVar("mask_kind_bound", default={})
# Where a helper defined in another module is found: (file, callee, scope) -> (file, FunctionDef) or None.
# Set while a program is judged (its project resolves imports); a file judged alone follows local helpers only.
HELPERS: ContextVar[Optional[Callable]] = ContextVar("mask_kind_helpers", default=None)


def _helper(facts: FileFacts, name: str, depth: int, site: Optional[CallSite] = None) -> Optional[Kind]:
    """A local function's (or a method's, by qualified name) returns, when they all mean the same; its
    parameters mean what the call site passes. Through the project, a helper imported from another module."""
    function = facts.functions.get(name)
    if function is None and site is not None and HELPERS.get() is not None and name:
        found = HELPERS.get()(facts, name, site.scope)
        if found is not None and isinstance(found[1], FunctionDef):
            facts, function = found
            name = function.qualname
    if function is None:
        return None
    token = _BOUND.set({**_BOUND.get(), **_bind(function, site, facts.abspath)}) if site is not None else None
    try:
        kinds = {kind_of(facts, r.value, name, r.order, depth + 1) for r in facts.returns if r.scope == name}
    finally:
        if token is not None:
            _BOUND.reset(token)
    if len(kinds) != 1:
        return None
    return next(iter(kinds))


def _bind(function: FunctionDef, site: CallSite, path: str) -> dict:
    """(helper, parameter) -> the argument passed for it: positional in order (after `self` for a method),
    then by keyword; starred arguments bind nothing."""
    params = function.params[1:] if function.owner and function.params[:1] == ("self",) else function.params
    bound: dict = {}
    positional = [a for a in site.args if a.keyword is None]
    for param, arg in zip(params, positional):
        if arg.star:
            break
        bound[(path, function.qualname, param)] = (arg.value, site.scope, site.order, site.facts)
    for arg in site.args:
        if arg.keyword in params:
            bound[(path, function.qualname, arg.keyword)] = (arg.value, site.scope, site.order, site.facts)
    return bound


def _operation(facts: FileFacts, value: Value, scope: str, order: int, depth: int) -> Optional[Kind]:
    op, operands = value.op, value.operands
    if len(operands) != 2:
        return None
    left, right = operands
    if op in ("==", "!=", "<"):
        if right.literal != 0 or isinstance(right.literal, bool):
            return None
        source = kind_of(facts, left, scope, order, depth + 1)
        if op == "<":
            return Kind("drop", True, "< 0") if source is not None and source.meaning == "additive" else None
        return _convert(source, _NEGATE if op == "==" else _NONZERO, True, f"{op} 0")
    if op == "*":
        for mask, factor in ((left, right), (right, left)):
            if is_negative_constant(facts, factor, scope, order, depth):
                return _scaled(facts, mask, scope, order, depth)
    return None


def _scaled(facts: FileFacts, mask: Value, scope: str, order: int, depth: int) -> Optional[Kind]:
    """`(1 - keep) * -1e4` (the extended-mask idiom: additive whatever `keep` is known to be) or
    `drop * -inf`: an additive mask."""
    if mask.op == "-" and len(mask.operands) == 2 and mask.operands[0].literal in (1, 1.0):
        inner = kind_of(facts, mask.operands[1], scope, order, depth + 1)
        if inner is None or inner.meaning in ("keep", "ones"):
            return Kind("additive", False, "(1 - mask) * -inf")
        return None
    source = kind_of(facts, mask, scope, order, depth + 1)
    if source is not None and source.meaning == "drop":
        return Kind("additive", False, "mask * -inf")
    return None


def _convert(kind: Optional[Kind], table_: dict, boolean: bool, how: str) -> Optional[Kind]:
    if kind is None or kind.meaning not in table_:
        return None
    return Kind(table_[kind.meaning], boolean, f"{kind.how}, then {how}")


def _apply(facts: FileFacts, kind: Optional[Kind], method: str, args: tuple, scope: str, order: int,
           depth: int) -> Optional[Kind]:
    """The meaning after `.method(args)` (or `[...]`, `~`) is applied to a mask of `kind`."""
    if method == "masked_fill":
        fill = _arg(args, "value", 1)
        if fill is not None and is_negative_constant(facts, fill.value, scope, order, depth):
            return Kind("additive", False, "masked_fill(..., -inf)")  # the large number is where it masks
        return kind
    if method in ("tril", "triu"):
        shifted = tuple(Arg("diagonal", a.value) if a.keyword is None else a for a in args[:1]) + args[1:]
        return _triangle(method, kind, shifted)
    if kind is None:
        return None
    if method in _names("keeping"):
        return kind
    if method in _names("to_float"):
        return Kind(kind.meaning, False, kind.how)
    if method == "to" or method == "type":
        dtype = _arg(args, "dtype", 0)
        if dtype is not None and dtype.value.names & _names("bool_dtypes"):
            return _convert(kind, _NONZERO, True, ".to(torch.bool)")
        return Kind(kind.meaning, None if dtype is not None else kind.boolean, kind.how)
    if method in _names("to_bool"):
        return _convert(kind, _NONZERO, True, ".bool()")
    compared = _arg(args, "other", 0)
    if compared is not None and (compared.value.literal != 0 or isinstance(compared.value.literal, bool)):
        return None  # `.eq(1)`, `.ne(x)`: not a test against zero
    if method in _names("zero_methods"):
        return _convert(kind, _NEGATE, True, f".{method}()")
    if method in _names("nonzero_methods"):
        return _convert(kind, _NONZERO, True, f".{method}()")
    if method == "~":
        # `~` of a float tensor raises: only a boolean (or possibly boolean) mask is inverted.
        return _convert(kind, _NEGATE, True, "~") if kind.boolean is not False else None
    return None
