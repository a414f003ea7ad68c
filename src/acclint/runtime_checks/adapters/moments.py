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


def shift_of(first: float) -> float:
    """The shift for a tensor whose first value is `first`: that value, or 0 when it is not finite
    (shifting by inf or NaN would turn every value into NaN)."""
    return first if math.isfinite(first) else 0.0


def moment_stats(shifted_total: float, shifted_sum_sq: float, shift: float, low: float, high: float,
                 count: int) -> dict[str, float]:
    """mean, std, min, max and L2 norm of `count` values from the sum and the sum of squares of the
    values minus `shift` (one of them), accumulated in float64, and their min and max.

    The sum of squares of the values themselves, for the norm, is S2 + 2 * shift * S1 + n * shift^2:
    terms that add up (S1 is small against n * shift), so nothing cancels there either."""
    shifted_mean = shifted_total / count
    variance = max(shifted_sum_sq / count - shifted_mean * shifted_mean, 0.0)
    # No shift, or an infinite value: the shifted sums say it already (and inf - inf must not make NaN).
    sum_sq = shifted_sum_sq if shift == 0 or not math.isfinite(shifted_sum_sq) else max(shifted_sum_sq + 2.0 * shift * shifted_total + count * shift * shift, 0.0)
    return {"mean": shift + shifted_mean, "std": math.sqrt(variance), "min": low, "max": high,
            "norm": math.sqrt(sum_sq)}
