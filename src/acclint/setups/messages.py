"""The sentence for one mismatch: what the setting is, each side's value and where it comes from,
and what to change on the right (LEFT is the reference)."""

from __future__ import annotations

from acclint.setups import keys
from acclint.setups.record import Setting, Setup
from acclint.setups.values import show

NO_BIAS_CORRECTION = (
    "MindSpore nn.AdamWeightDecay applies no bias correction (m and v are not divided by 1 - beta^t), "
    "so its first updates differ from torch.optim.AdamW even with equal hyperparameters; use "
    "mindspore.mint.optim.AdamW (or mindspore.experimental.optim.AdamW), which matches torch"
)


ROLE_KEYS = frozenset({"optimizer", "lr-scheduler", "loss"})
PARAM_GROUPS = "param groups"


def describe(setting: Setting, setup: Setup) -> str:
    """`0.95 (gpu.sh:22)`, `0.999 (Megatron-LM core_v0.12.1 default)`, `unknown ($LR, npu.sh:9)`."""
    converted = setting.origin == "derived" and setting.written
    if not setting.known:
        value = setting.written if converted else f"unknown ({setting.written or show(setting.value)})"
    else:
        value = show(setting.value) if setting.value is not None else "not set"
    details = []
    if setting.where is not None:
        details.append(str(setting.where))
    if (setting.key in ROLE_KEYS or setting.written.startswith(PARAM_GROUPS)) and setting.written:
        details.append(setting.written)
    if setting.is_default:
        details.append(setting.written or "default")
    elif converted and setting.known:
        details.append(setting.written)
    if setting.note:
        details.append(setting.note)
    return f"{value} ({'; '.join(details)})" if details else value


def message(key: str, left: Setting, right: Setting, left_setup: Setup, right_setup: Setup) -> str:
    return _sentence(key, left, right, left_setup, right_setup) + _context(key, left_setup, right_setup)


def _context(key: str, left_setup: Setup, right_setup: Setup) -> str:
    """` (global-batch-size: left 256 (gpu.sh:29), right 256 (npu.sh:30))` for keys `[context]` names."""
    parts = []
    for other in keys.knowledge()["context"].get(key, ()):
        left, right = left_setup.settings.get(other), right_setup.settings.get(other)
        if left is not None or right is not None:
            shown = [f"{side} {describe(s, setup) if s is not None else 'not set'}"
                     for side, s, setup in (("left", left, left_setup), ("right", right, right_setup))]
            parts.append(f"{other}: {', '.join(shown)}")
    return f" ({'; '.join(parts)})" if parts else ""


def _sentence(key: str, left: Setting, right: Setting, left_setup: Setup, right_setup: Setup) -> str:
    if left.semantics != right.semantics:
        return _semantics(key, left, right, left_setup, right_setup)
    if key in keys.knowledge()["fused"] and {left.value, right.value} == {True, False}:
        return _fused_call(key, left, right)
    what = keys.why(key)
    if key in keys.knowledge()["groups"]["parallel"]:
        what = "parallel layout: the same math in another reduction order; `--ignore parallel` accepts it"
    head = f"{key}" + (f" ({what})" if what else "")
    if keys.category(key) == "fused-op" and {left.value, right.value} == {True, False} and not key.startswith("no-"):
        return _fused_switch(head, left, right, left_setup, right_setup)
    if (left.value is None and left.written == "not set") or (right.value is None and right.written == "not set"):
        return _one_sided(key, head, left, right, left_setup, right_setup)
    sides = f"left {describe(left, left_setup)}, right {describe(right, right_setup)}"
    return f"{head}: {sides}. {_fix(key, left, right, right_setup)}"


def _fused_call(key: str, left: Setting, right: Setting) -> str:
    fused, plain = (left, right) if left.value is True else (right, left)
    fused_side, plain_side = ("left", "right") if fused is left else ("right", "left")
    unfused = f"computes it unfused at {plain.where}" if plain.where else "does not call it"
    return (f"{key}: the {fused_side} calls the fused kernel {fused.written} ({fused.where}); the {plain_side} "
            f"{unfused}. Fused kernels round differently from the composed ops; while aligning accuracy, "
            "use the same form on both sides (or accept the kernel's tolerance explicitly).")


def _fused_switch(head: str, left: Setting, right: Setting, left_setup: Setup, right_setup: Setup) -> str:
    on_side = "right" if right.value is True else "left"
    on = right if right.value is True else left
    return (f"{head}: on only on the {on_side} ({on.where}); left {describe(left, left_setup)}, right "
            f"{describe(right, right_setup)}. Fused kernels round differently from the composed ops: while "
            f"aligning accuracy, run the {on_side} without --{on.key}, then turn it back on and compare.")


def _one_sided(key: str, head: str, left: Setting, right: Setting, left_setup: Setup, right_setup: Setup) -> str:
    if left.value is None:
        return (f"{head}: set only on the right ({describe(right, right_setup)}); the left does not set it. "
                "Configure it the same way on both sides (set it on the left too, or remove it on the right).")
    return (f"{head}: set only on the left ({describe(left, left_setup)}); the right does not set it. "
            f"Set it to {show(left.value)} on the right to match the left.")


def _semantics(key: str, left: Setting, right: Setting, left_setup: Setup, right_setup: Setup) -> str:
    names = f"left {left.written} ({left.where}), right {right.written} ({right.where})"
    reason = NO_BIAS_CORRECTION if "no-bias-correction" in (left.semantics, right.semantics) else (
        f"the two implementations differ ({left.semantics or 'standard'} vs {right.semantics or 'standard'})"
    )
    return f"{key}: same name '{show(left.value)}', different algorithm: {names}. {reason}."


def _fix(key: str, left: Setting, right: Setting, right_setup: Setup) -> str:
    if not left.known or not right.known:
        unknown = left if not left.known else right
        side = "left" if not left.known else "right"
        if unknown.origin == "derived":
            return ("The two sides count this in different units and it cannot be converted exactly; "
                    "write it in the same unit on both sides.")
        return f"The {side} value cannot be read statically; check that both runs use the same value."
    target = show(left.value)
    if PARAM_GROUPS in (left.written[: len(PARAM_GROUPS)], right.written[: len(PARAM_GROUPS)]):
        return f"Give the right's optimizer param groups the left's values {target}, group by group."
    if right_setup.kind in ("launch", "folder") and right.where is None or (
        right.where is not None and right.written.startswith("--")
    ):
        if left.value is True:
            return f"Add --{key} on the right to match the left."
        if left.value is False:
            return f"Remove --{key} on the right to match the left (or add it on the left)."
        if left.value is None:
            return f"Remove --{key} on the right, or set it on the left too."
        return f"Pass --{key} {target} on the right to match the left."
    if right.where is not None and left.value is None and left.is_default:
        return f"Remove it at {right.where} (the left leaves it to the default), or set it on the left too."
    if right.where is not None:
        return f"Set it to {target} at {right.where} to match the left."
    if left.value is None:
        return "Set it on the left too, or remove it on the right."
    return f"Set it to {target} on the right to match the left."
