"""The statistics every tensor record carries, from the few reductions both summarisers compute."""

from __future__ import annotations

import math

EMPTY_STATS = {"mean": 0.0, "std": 0.0, "min": 0.0, "max": 0.0, "norm": 0.0}


def moment_stats(total: float, sum_sq: float, low: float, high: float, count: int) -> dict[str, float]:
    """mean, std, min, max and L2 norm from the sum, the sum of squares, min and max of `count` values."""
    mean = total / count
    variance = max(sum_sq / count - mean * mean, 0.0)
    return {"mean": mean, "std": math.sqrt(variance), "min": low, "max": high, "norm": math.sqrt(sum_sq)}
