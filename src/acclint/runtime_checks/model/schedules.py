"""The learning-rate schedule around an optimizer, as its scheduler says it: kind, warmup, length.

A warmup hides the peak: at step 0 the lr is 0 or tiny on both sides whatever the peak, so a 10x
different peak would compare equal. The peak itself is the group's `initial_lr`, which every torch
LRScheduler (and timm's and MindSpore's experimental schedulers) writes into the param group;
`optimizers.normalise_group_keys` records it as `peak-lr`. This module adds what only the
scheduler object knows. Schedulers are found by what refers to the optimizer (duck-typed: an
object with `optimizer` and `step`), so no framework or library is imported and a scheduler made
before acclint started watching is found too.
"""

from __future__ import annotations

import gc
import math
from typing import Any, Callable

# Where schedulers keep their warmup length and total length (torch, transformers' lambdas, timm).
WARMUP_ATTRIBUTES = ("num_warmup_steps", "warmup_steps", "warmup_t", "warmup_iters", "warmup_epochs")
LENGTH_ATTRIBUTES = ("num_training_steps", "total_steps", "t_initial", "T_max", "total_iters", "max_steps")
# A LambdaLR whose warmup length is not written anywhere: read from its multiplier, up to this step.
LAMBDA_STEPS_READ = 20000


# What a scheduler holds and an optimizer wrapper (accelerate's AcceleratedOptimizer) does not.
SCHEDULER_ATTRIBUTES = ("base_lrs", "lr_lambdas", "_schedulers", "base_values", "last_epoch")


def schedulers_of(optimizer: Any) -> list[Any]:
    """The outermost schedulers driving `optimizer` (a SequentialLR, not the schedulers inside it),
    also through a wrapper around it (transformers' Trainer schedules accelerate's wrapper)."""
    found = []
    for holder in _holders(optimizer):
        if any(hasattr(holder, name) for name in SCHEDULER_ATTRIBUTES):
            found.append(holder)
        else:
            found += [obj for obj in _holders(holder) if any(hasattr(obj, n) for n in SCHEDULER_ATTRIBUTES)]
    inner = {id(child) for obj in found for child in getattr(obj, "_schedulers", ()) or ()}
    return [obj for obj in found if id(obj) not in inner]


def _holders(optimizer: Any) -> list[Any]:
    """Objects whose `optimizer` is this one and that can step (schedulers, optimizer wrappers)."""
    return [obj for obj in gc.get_referrers(optimizer)
            if obj is not optimizer and getattr(obj, "optimizer", None) is optimizer
            and callable(getattr(obj, "step", None))]


def schedule_record(optimizer: Any) -> dict[str, Any]:
    """`lr-schedule` (the scheduler's class), `warmup-steps` and `schedule-steps` where it says them."""
    record: dict[str, Any] = {}
    schedulers = schedulers_of(optimizer)
    if not schedulers:
        return record
    scheduler = schedulers[0]
    record["lr-schedule"] = "+".join(type(s).__name__ for s in schedulers)
    warmup = _warmup(scheduler)
    if warmup is not None:
        record["warmup-steps"] = warmup
    length = _first_number(scheduler, LENGTH_ATTRIBUTES)
    if length is not None:
        record["schedule-steps"] = length
    return record


def _warmup(scheduler: Any) -> int | None:
    children = getattr(scheduler, "_schedulers", None)
    milestones = getattr(scheduler, "_milestones", None)
    if children and milestones and _warms_up(children[0]):  # SequentialLR: the first phase is the warmup
        return int(milestones[0])
    if type(scheduler).__name__ == "OneCycleLR":
        total, share = getattr(scheduler, "total_steps", None), getattr(scheduler, "_schedule_phases", None)
        if share:
            return int(share[0]["end_step"]) + 1
        return None if total is None else int(total)
    if type(scheduler).__name__ == "LinearLR":
        return int(scheduler.total_iters) if scheduler.start_factor < scheduler.end_factor else None
    found = _first_number(scheduler, WARMUP_ATTRIBUTES)
    if found is not None:
        return found
    lambdas = getattr(scheduler, "lr_lambdas", None)
    if lambdas:
        return _lambda_warmup(lambdas[0])
    return None


def _warms_up(scheduler: Any) -> bool:
    name = type(scheduler).__name__
    if name == "LinearLR":
        return scheduler.start_factor < scheduler.end_factor
    if name == "LambdaLR":
        return _rises(scheduler.lr_lambdas[0])
    return name in ("ConstantLR",) or _first_number(scheduler, WARMUP_ATTRIBUTES) is not None


def _first_number(scheduler: Any, names: tuple[str, ...]) -> int | None:
    """The first of `names` that the scheduler (or its lambda's functools.partial keywords) holds."""
    places = [vars(scheduler) if hasattr(scheduler, "__dict__") else {}]
    for function in getattr(scheduler, "lr_lambdas", None) or ():
        places.append(getattr(function, "keywords", None) or {})
    for place in places:
        for name in names:
            value = place.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                return int(value)
    return None


def _lambda_warmup(multiplier: Callable[[int], float]) -> int | None:
    """Steps until a LambdaLR multiplier first reaches its largest value, when it starts below it:
    the warmup of a schedule written as a lambda (litgpt's, a user's)."""
    if getattr(multiplier, "keywords", None):
        found = next((multiplier.keywords[n] for n in WARMUP_ATTRIBUTES if n in multiplier.keywords), None)
        if isinstance(found, int):
            return found
    try:
        values = [float(multiplier(step)) for step in range(LAMBDA_STEPS_READ)]
    except Exception:  # a lambda that cannot be evaluated ahead (state, a closed-over object): not said
        return None
    peak = max(values)
    first = values.index(peak)
    return first if 0 < first < LAMBDA_STEPS_READ - 1 and values[0] < peak else None


def _rises(multiplier: Callable[[int], float]) -> bool:
    try:
        return float(multiplier(0)) < float(multiplier(1))
    except Exception:
        return False


# A MindSpore LearningRateSchedule cell's peak: its own attribute (WarmUpLR's learning_rate, the
# decay schedules' max_lr / learning_rate).
CELL_PEAK_ATTRIBUTES = ("max_lr", "learning_rate")


def cell_schedule(optimizer: Any) -> tuple[float | None, dict[str, Any]]:
    """(peak lr, schedule record) of a MindSpore nn.* optimizer with a dynamic lr: a per-step list
    (its largest value, and the steps before it as the warmup) or a LearningRateSchedule cell."""
    schedule = getattr(optimizer, "learning_rate", None)
    if not getattr(optimizer, "dynamic_lr", False) or getattr(optimizer, "is_group_lr", False) or schedule is None:
        return None, {}
    listed = getattr(schedule, "_params", {}).get("learning_rate") if hasattr(schedule, "_params") else None
    if listed is not None and hasattr(listed, "asnumpy") and listed.asnumpy().size > 1:
        values = [float(v) for v in listed.asnumpy().reshape(-1)]
        peak = max(values)
        record: dict[str, Any] = {"lr-schedule": "per-step list", "schedule-steps": len(values)}
        if values.index(peak) > 0 and values[0] < peak:
            record["warmup-steps"] = values.index(peak)
        return peak, record
    record = {"lr-schedule": type(schedule).__name__}
    warmup = _first_number(schedule, WARMUP_ATTRIBUTES)
    if warmup is not None:
        record["warmup-steps"] = warmup
    length = _first_number(schedule, ("decay_steps", "total_step", *LENGTH_ATTRIBUTES))
    if length is not None:
        record["schedule-steps"] = length
    peak = next((float(v) for n in CELL_PEAK_ATTRIBUTES
                 if isinstance(v := vars(schedule).get(n), (int, float)) and not isinstance(v, bool)), None)
    return peak, record
