"""Flags Megatron-LM derives from others when a script leaves them out (None in the parser).

Megatron core_v0.12.1 `megatron/training/arguments.py::validate_args` and `training.py`
(scheduler): kv_channels = hidden_size // num_attention_heads; ffn_hidden_size = 4 * hidden
(with --swiglu: int(4 * hidden * 2 / 3 / 64) * 64); num_query_groups = num_attention_heads
without --group-query-attention; lr_decay_iters falls back to train_iters (and
lr_decay_samples to train_samples).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from acclint.setups.record import Setting


def _int(settings: dict, key: str) -> Optional[int]:
    setting = settings.get(key)
    if setting is None or not setting.known or isinstance(setting.value, bool):
        return None
    return setting.value if isinstance(setting.value, int) else None


def _kv_channels(s: dict) -> Optional[tuple[Any, str]]:
    hidden, heads = _int(s, "hidden-size"), _int(s, "num-attention-heads")
    if hidden and heads:
        return hidden // heads, f"hidden-size {hidden} // num-attention-heads {heads}"
    return None


def _ffn_hidden_size(s: dict) -> Optional[tuple[Any, str]]:
    hidden = _int(s, "hidden-size")
    if not hidden:
        return None
    swiglu = s.get("swiglu")
    if swiglu is not None and swiglu.value is True:
        return int((4 * hidden * 2 / 3) / 64) * 64, f"with --swiglu, int(4 * hidden-size {hidden} * 2/3 / 64) * 64"
    return 4 * hidden, f"4 * hidden-size {hidden}"


def _num_query_groups(s: dict) -> Optional[tuple[Any, str]]:
    gqa = s.get("group-query-attention")
    heads = _int(s, "num-attention-heads")
    if heads and (gqa is None or gqa.value is not True):
        return heads, f"num-attention-heads {heads} (no --group-query-attention)"
    return None


def _fallback(source: str) -> Callable[[dict], Optional[tuple[Any, str]]]:
    def derive(s: dict) -> Optional[tuple[Any, str]]:
        value = _int(s, source)
        return (value, f"falls back to {source} {value}") if value is not None else None

    return derive


DERIVATIONS: dict[str, Callable[[dict], Optional[tuple[Any, str]]]] = {
    "kv-channels": _kv_channels,
    "ffn-hidden-size": _ffn_hidden_size,
    "num-query-groups": _num_query_groups,
    "lr-decay-iters": _fallback("train-iters"),
    "lr-decay-samples": _fallback("train-samples"),
}


def derived_default(key: str, settings: dict, source: str) -> Optional[Setting]:
    """The value Megatron derives for `key` from this side's other settings, or None."""
    derive = DERIVATIONS.get(key)
    found = derive(settings) if derive is not None else None
    if found is None:
        return None
    value, how = found
    return Setting(key, value, None, origin="default", written=f"{source}: {how}")
