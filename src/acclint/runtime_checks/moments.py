"""The statistics every tensor record carries, from the few reductions both summarisers compute.

The variance is taken from sums of the values *shifted* by one of them (`shift`, the tensor's
first value), accumulated in float64: sum((x - shift)^2) / n - mean_shifted^2 loses nothing to
cancellation when the mean is large against the spread. The plain E[x^2] - E[x]^2 did: a module
output with mean 3 and std 0.029 was recorded with std 0.0286624 instead of 0.0286478 (float32
sums), and at mean 100 with std 0.0, which `compare` then called a forward mismatch.
"""

from __future__ import annotations

import math

EMPTY_STATS = {"mean": 0.0, "std": 0.0, "min": 0.0, "max": 0.0, "norm": 0.0}


def moment_stats(
    total: float, sum_sq: float, low: float, high: float, count: int, shifted_total: float, shifted_sum_sq: float
) -> dict[str, float]:
    """mean, std, min, max and L2 norm of `count` values from their sum and sum of squares (for the
    mean and the norm), min and max, and the sum and sum of squares of the values minus a shift
    taken from among them (for the std)."""
    mean = total / count
    shifted_mean = shifted_total / count
    variance = max(shifted_sum_sq / count - shifted_mean * shifted_mean, 0.0)
    return {"mean": mean, "std": math.sqrt(variance), "min": low, "max": high, "norm": math.sqrt(sum_sq)}
