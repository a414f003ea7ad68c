"""When two dumped values agree: tensors by md5 or statistics within their dtype's tolerance,
non-tensor arguments by value (at float32 resolution)."""

from __future__ import annotations

import math
from typing import Any, Iterator

from acclint.knowledge import table

from acclint.runtime_checks.dumps.reader import Scalar, Tensor
from acclint.runtime_checks.model.optimizers import values_equal


def tolerances() -> dict[str, float]:
    return table("msprobe_dumps")["tolerances"]


_LIMITS: dict[str, float] = {}  # tolerances(), read once: tensors_agree runs millions of times on a large dump


def tolerance_text() -> str:
    limits = tolerances()
    shown = ", ".join(f"{dtype} {_short(value)}" for dtype, value in limits.items() if dtype not in ("atol", "default"))
    return f"dump statistics within rtol {shown}, atol {_short(limits['atol'])}; or equal md5"


def _short(value: float) -> str:
    return format(value, ".0e").replace("e-0", "e-")


def tensors_agree(a: Tensor, b: Tensor) -> bool:
    """Equal md5, or every statistic both sides recorded within atol + rtol * scale: the larger norm for
    the norm, the larger RMS for max, min and mean (as forward_compare.stats_close judges activations;
    written over the dump's stats tuples because a large dump compares millions of them)."""
    if a.shape != b.shape:
        return False
    if a.stats == b.stats and None not in a.stats or (a.md5 is not None and a.md5 == b.md5):
        return True
    if a.stats[3] is None and b.stats[3] is None and a.md5 is not None:  # md5-only summaries, unequal
        return False
    if not _LIMITS:
        _LIMITS.update(tolerances())
    limits = _LIMITS
    rtol = max(limits.get(a.dtype, limits["default"]), limits.get(b.dtype, limits["default"]))
    atol = limits["atol"]
    norm = max(abs(a.stats[3] or 0.0), abs(b.stats[3] or 0.0))
    rms = norm / math.sqrt(max(1, a.numel))
    for index, (x, y) in enumerate(zip(a.stats, b.stats)):
        if x is None or y is None:
            continue
        if not (math.isfinite(x) and math.isfinite(y)):
            if not (x == y or (math.isnan(x) and math.isnan(y))):
                return False
        elif abs(x - y) > atol + rtol * (norm if index == 3 else rms):
            return False
    return True


_ABSENT = object()


def _leaf_pairs(a: Any, b: Any, path: str) -> Iterator[tuple[str, Any, Any, Any]]:
    """(parent path, key, left leaf, right leaf) of two nested argument structures, walked together;
    a side without the key gives _ABSENT. Path strings are built only for nested containers."""
    if isinstance(a, dict) and isinstance(b, dict):
        items = [(k, a[k], b.get(k, _ABSENT)) for k in a] + [(k, _ABSENT, b[k]) for k in b if k not in a]
    elif isinstance(a, list) and isinstance(b, list):
        items = [(i, x, b[i] if i < len(b) else _ABSENT) for i, x in enumerate(a)]
        items += [(i, _ABSENT, b[i]) for i in range(len(a), len(b))]
    else:
        return
    for key, x, y in items:
        if isinstance(x, (list, dict)) and type(x) is type(y):
            yield from _leaf_pairs(x, y, f"{path}.{key}" if path else str(key))
        else:
            yield path, key, x, y


def _joined(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def first_difference(left: Any, right: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first (path, left, right) tensor pair that differs; a tensor present on one side only counts
    as a difference, non-tensor arguments are left to scalar_differences. (A plain recursion, not
    _leaf_pairs: it runs on every matched node of a large dump.)"""
    if isinstance(left, dict) and isinstance(right, dict):
        for key, x in left.items():
            found = _leaf_difference(x, right.get(key, _ABSENT), path, key)
            if found:
                return found
        extra = [(key, y) for key, y in right.items() if key not in left]
    elif isinstance(left, list) and isinstance(right, list):
        for index, x in enumerate(left):
            found = _leaf_difference(x, right[index] if index < len(right) else _ABSENT, path, index)
            if found:
                return found
        extra = list(enumerate(right))[len(left):]
    else:
        return None
    return next(((_joined(path, key), None, y) for key, y in extra if type(y) is Tensor), None)


def _leaf_difference(x: Any, y: Any, path: str, key: Any) -> tuple[str, Any, Any] | None:
    x_type, y_type = type(x), type(y)
    if x_type is Tensor:
        if y_type is Tensor:
            return None if tensors_agree(x, y) else (_joined(path, key), x, y)
        return _joined(path, key), x, None
    if y_type is Tensor:
        return _joined(path, key), None, y
    if x_type is y_type and x_type in (list, dict):
        return first_difference(x, y, _joined(path, key))
    return None


def scalar_differences(left: Any, right: Any) -> list[tuple[str, Any, Any]]:
    """(path, left value, right value) of the non-tensor arguments both sides pass with other values."""
    return [(_joined(path, key), x.value, y.value) for path, key, x, y in _leaf_pairs(left, right, "")
            if type(x) is Scalar and type(y) is Scalar and not values_equal(x.value, y.value)]


def view(value: Any) -> Any:
    """A JSON-able view of one side of a difference."""
    if isinstance(value, Tensor):
        shown: dict[str, Any] = value.named_stats()
        shown["shape"] = list(value.shape)
        shown["dtype"] = value.dtype
        if value.md5:
            shown["md5"] = value.md5
        return shown
    if isinstance(value, Scalar):
        return value.value
    return value


def text(value: Any) -> str:
    if isinstance(value, Tensor):
        named = value.named_stats()
        stats = ", ".join(f"{k} {named[k]:.6g}" for k in ("norm", "mean", "max") if k in named)
        return f"{value.dtype}{list(value.shape)} {stats or 'md5 ' + str(value.md5)}"
    if isinstance(value, Scalar):
        return repr(value.value)
    return "absent" if value is None else repr(value)
