"""Settings written in different units on the two sides, brought to one unit where exact.

`--train-samples S` against `--train-iters N` compare as iterations when the samples side's
global batch G is known and divides S (Megatron: iterations = samples / global batch, with no
batch ramp-up). A warmup fraction F against warmup iterations W compares as F x decay
iterations (Megatron: warmup = fraction x lr-decay-iters, which falls back to train-iters).
Where the conversion is not exact, the converted setting is marked unknown and says why.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from acclint.setups.record import Setting
from acclint.setups.values import show

SAMPLE_UNITS = (
    ("train-iters", "train-samples"),
    ("lr-decay-iters", "lr-decay-samples"),
    ("lr-warmup-iters", "lr-warmup-samples"),
)


WARMUP_UNITS = ("lr-warmup-iters", "lr-warmup-samples", "lr-warmup-fraction")


def reconcile(left: dict, right: dict) -> None:
    """Rewrite, in place, settings one side writes in another unit than the other side."""
    for iters, samples in SAMPLE_UNITS[:2]:
        _samples_to_iters(left, right, iters, samples)
        _samples_to_iters(right, left, iters, samples)
    _autocast_as_amp_level(left, right)
    _autocast_as_amp_level(right, left)
    left_unit, right_unit = _warmup_unit(left), _warmup_unit(right)
    if left_unit and right_unit and left_unit != right_unit:
        for side in (left, right):
            converted = _warmup_iters(side)
            for key in WARMUP_UNITS:
                side.pop(key, None)
            side["lr-warmup-iters"] = converted


def _explicit(settings: dict, key: str) -> Optional[Setting]:
    setting = settings.get(key)
    return setting if setting is not None and not setting.is_default and setting.value is not None else None


def _samples_to_iters(side: dict, other: dict, iters: str, samples: str) -> None:
    given = _explicit(side, samples)
    # The other side counts in iterations: it says so, or (for the decay) it falls back to train-iters.
    other_iters = _explicit(other, iters) or (iters == "lr-decay-iters" and _explicit(other, "train-iters"))
    if given is None or _explicit(side, iters) or not other_iters or _explicit(other, samples):
        return
    del side[samples]
    side[iters] = _as_iters(side, given, iters)


def _as_iters(side: dict, given: Setting, iters: str) -> Setting:
    """A count of samples as iterations: exact when the global batch is known, fixed and divides it."""
    batch = _explicit(side, "global-batch-size")
    written = f"{given.written or given.key} (samples)"
    ramp = _explicit(side, "rampup-batch-size")
    exact = (
        batch is not None and batch.known and given.known and isinstance(batch.value, int)
        and isinstance(given.value, int) and batch.value > 0 and given.value % batch.value == 0 and ramp is None
    )
    if exact:
        return replace(given, key=iters, value=given.value // batch.value, origin="derived", written=written,
                       note=f"{show(given.value)} samples / global batch {show(batch.value)}")
    reason = (
        "the global batch ramps up" if ramp is not None
        else "the global batch is not known" if batch is None or not batch.known
        else f"{show(given.value)} / global batch {show(batch.value)} = "
             f"{given.value / batch.value:.6g} is not a whole number of iterations"
    )
    return replace(given, key=iters, origin="derived", written=written, known=False,
                   note=f"counted in samples, not exactly convertible to iterations: {reason}")


def _warmup_unit(side: dict) -> Optional[str]:
    for key in WARMUP_UNITS:
        setting = _explicit(side, key)
        if setting is not None and not (key == "lr-warmup-iters" and setting.value == 0):
            return key
    return None


def _warmup_iters(side: dict) -> Setting:
    unit = _warmup_unit(side)
    if unit is None:  # no warmup written: Megatron's default is none
        found = side.get("lr-warmup-iters")
        return found or Setting("lr-warmup-iters", 0, None, origin="default", written="no warmup (default 0)")
    given = side[unit]
    if unit == "lr-warmup-iters":
        return given
    if unit == "lr-warmup-samples":
        return _as_iters(side, given, "lr-warmup-iters")
    decay = _explicit(side, "lr-decay-iters") or _explicit(side, "train-iters")
    written = given.written or unit
    if decay is None or not decay.known or not given.known or not isinstance(decay.value, (int, float)):
        return replace(given, key="lr-warmup-iters", origin="derived", written=written, known=False,
                       note="a warmup fraction, and the decay length in iterations it is a fraction of is not known")
    return replace(given, key="lr-warmup-iters", value=round(given.value * decay.value, 9), origin="derived",
                   written=written, note=f"warmup fraction {show(given.value)} x {decay.key} {show(decay.value)}")


def _autocast_as_amp_level(side: dict, other: dict) -> None:
    """torch autocast (`torch.autocast`, a trainer's `--amp`) against a MindSpore `amp_level`:
    autocast runs a whitelist of ops in low precision, which is MindSpore's O1 (O2 casts all but
    BatchNorm / LayerNorm, O3 everything)."""
    if "amp-level" in side or "amp-level" not in other:
        return
    given = _explicit(side, "autocast-dtype") or _explicit(side, "amp")
    if given is None or given.value is False:
        return
    side["amp-level"] = replace(given, key="amp-level", value="O1", origin="derived", written=given.written,
                                note="torch autocast casts a whitelist of ops, as MindSpore's O1 does")
