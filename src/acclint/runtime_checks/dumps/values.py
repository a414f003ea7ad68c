"""When two dumped values agree: tensors by md5 or statistics within their dtype's tolerance,
non-tensor arguments by value (at float32 resolution)."""

from __future__ import annotations

from typing import Any

from acclint.knowledge import table
from acclint.runtime_checks.compare.forward_compare import stats_close
from acclint.runtime_checks.dumps.reader import Scalar, Tensor
from acclint.runtime_checks.model.optimizers import values_equal


def tolerances() -> dict[str, float]:
    return table("msprobe_dumps")["tolerances"]


def rtol_for(dtype: str) -> float:
    limits = tolerances()
    return float(limits.get(dtype, limits["default"]))


def tolerance_text() -> str:
    limits = tolerances()
    shown = ", ".join(f"{dtype} {_short(value)}" for dtype, value in limits.items() if dtype not in ("atol", "default"))
    return f"dump statistics within rtol {shown}, atol {_short(limits['atol'])}; or equal md5"


def _short(value: float) -> str:
    return format(value, ".0e").replace("e-0", "e-")


def tensors_agree(a: Tensor, b: Tensor) -> bool:
    if a.shape != b.shape:
        return False
    if a.md5 is not None and b.md5 is not None and a.md5 == b.md5:
        return True
    if not a.stats or not b.stats:  # an md5-only summary with different checksums
        return a.md5 == b.md5 and a.md5 is not None
    # The looser of the two dtypes: a bf16 side is judged by bf16's rounding step.
    rtol = max(rtol_for(a.dtype), rtol_for(b.dtype))
    return stats_close(a.stats, b.stats, max(1, a.numel), rtol, tolerances()["atol"], ("norm", "mean", "min", "max"))


def first_difference(left: list[tuple[str, Any]], right: list[tuple[str, Any]]) -> tuple[str, Any, Any] | None:
    """The first (path, left, right) whose values differ, matching by path; a tensor present on one
    side only counts as a difference, a missing non-tensor argument does not (frameworks differ there)."""
    others = dict(right)
    for path, value in left:
        if path not in others:
            if isinstance(value, Tensor):
                return path, value, None
            continue
        other = others[path]
        if isinstance(value, Tensor) and isinstance(other, Tensor):
            if not tensors_agree(value, other):
                return path, value, other
        elif isinstance(value, Scalar) and isinstance(other, Scalar):
            if not values_equal(value.value, other.value):
                return path, value, other
        elif isinstance(value, Tensor) != isinstance(other, Tensor):
            return path, value, other
    mine = {path for path, _ in left}
    for path, value in right:
        if path not in mine and isinstance(value, Tensor):
            return path, None, value
    return None


def scalar_differences(left: list[tuple[str, Any]], right: list[tuple[str, Any]]) -> list[tuple[str, Any, Any]]:
    others = {path: value for path, value in right if isinstance(value, Scalar)}
    return [(path, value.value, others[path].value) for path, value in left
            if isinstance(value, Scalar) and path in others and not values_equal(value.value, others[path].value)]


def view(value: Any) -> Any:
    """A JSON-able view of one side of a difference."""
    if isinstance(value, Tensor):
        shown: dict[str, Any] = {k: value.stats[k] for k in ("norm", "mean", "max", "min") if k in value.stats}
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
        stats = ", ".join(f"{k} {value.stats[k]:.6g}" for k in ("norm", "mean", "max") if k in value.stats)
        return f"{value.dtype}{list(value.shape)} {stats or 'md5 ' + str(value.md5)}"
    if isinstance(value, Scalar):
        return repr(value.value)
    return "absent" if value is None else repr(value)
