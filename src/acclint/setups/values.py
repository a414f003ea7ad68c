"""Values as the sides write them, made comparable: `1e-1` equals `0.1`, `True` equals `true`."""

from __future__ import annotations

import math
import re
from typing import Any

_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_TRUE = frozenset({"true", "on", "yes"})
_FALSE = frozenset({"false", "off", "no"})


def parse_text(text: str) -> Any:
    """A shell or config word as a number, bool or string (quotes already removed)."""
    stripped = text.strip()
    if len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "'\"":
        stripped = stripped[1:-1]  # quotes kept literally by an unquoted array expansion
    if _INT.fullmatch(stripped):
        return int(stripped)
    if _FLOAT.fullmatch(stripped):
        return float(stripped)
    lowered = stripped.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    return stripped


def same(left: Any, right: Any) -> bool:
    """Equal as settings: numbers by value (relative 1e-9, so 6e-5 == 0.00006), sequences item by item."""
    if isinstance(left, bool) or isinstance(right, bool):
        return left is right or (isinstance(left, bool) and isinstance(right, bool) and left == right)
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        return math.isclose(left, right, rel_tol=1e-9, abs_tol=0.0) or left == right
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right))
    if isinstance(left, str) and isinstance(right, str):
        return left.strip().lower() == right.strip().lower()
    return left == right


def show(value: Any) -> str:
    """A value for people: 1e-06 not 1e-06.0, tuples as (a, b), None as `none`."""
    if value is None:
        return "none"
    if value == "":
        return '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if value != int(value) or abs(value) >= 1e16 else f"{value:.1f}"
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(show(v) for v in value) + ")"
    return str(value)


def to_json(value: Any) -> Any:
    """JSON-safe: tuples become lists, anything else unknown becomes its text."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    return show(value)
