"""Optimizer normalisation: one algorithm name and launcher-spelled hyperparameters for both frameworks.

Two optimizers get the same normalised type only when they compute the same update. MindSpore's
`nn.AdamWeightDecay` has no bias correction, so it is *not* torch AdamW; `nn.Adam` (L2 weight
decay added to the gradient) is torch Adam; `nn.Momentum` is torch SGD with momentum.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

from acclint.runtime_checks.model.fingerprint import OptimizerGroup, OptimizerRecord
from acclint.runtime_checks.model.schedules import schedule_record

# torch class name -> normalised type (torch_npu's fused optimizers compute the same updates).
TORCH_OPTIMIZER_TYPES = {
    "Adam": "adam",
    "AdamW": "adamw",
    "SGD": "sgd",
    "RMSprop": "rmsprop",
    "Adagrad": "adagrad",
    "Adadelta": "adadelta",
    "Adamax": "adamax",
    "NAdam": "nadam",
    "RAdam": "radam",
    "ASGD": "asgd",
    "Rprop": "rprop",
    "LBFGS": "lbfgs",
    "SparseAdam": "sparse-adam",
    "NpuFusedAdam": "adam",
    "NpuFusedAdamW": "adamw",
    "NpuFusedSGD": "sgd",
    "NpuFusedRMSprop": "rmsprop",
    "NpuFusedAdadelta": "adadelta",
    "FusedAdam": "adamw",  # apex / Megatron default adam_w_mode=True
    "FusedSGD": "sgd",
    "Lamb": "lamb",
    "FusedLamb": "lamb",
}

# torch-style group flags that change the algorithm: (type, key, value) -> type.
TORCH_TYPE_OVERRIDES = {
    ("adam", "decoupled_weight_decay", True): "adamw",
    ("adamw", "decoupled_weight_decay", False): "adam",
    ("nadam", "decoupled_weight_decay", True): "nadamw",
    ("radam", "decoupled_weight_decay", True): "radamw",
}

# MindSpore nn.* optimizers (per-parameter lr/weight decay, hyperparameters as attributes).
MINDSPORE_OPTIMIZER_TYPES = {
    "Adam": "adam",
    "AdamOffload": "adam",
    "LazyAdam": "lazy-adam",
    "AdamWeightDecay": "adamw-no-bias-correction",
    "SGD": "sgd",
    "Momentum": "sgd",
    "RMSProp": "rmsprop-eps-in-sqrt",
    "Adagrad": "adagrad",
    "Adadelta": "adadelta",
    "Adamax": "adamax",
    "ASGD": "asgd",
    "Rprop": "rprop",
    "Lamb": "lamb",
    "LARS": "lars",
    "FTRL": "ftrl",
    "ProximalAdagrad": "proximal-adagrad",
}

# mindspore.experimental.optim.* mirror torch.optim, param_groups included.
MINDSPORE_EXPERIMENTAL_TYPES = {name: TORCH_OPTIMIZER_TYPES[name] for name in (
    "Adam", "AdamW", "SGD", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"
)}

ADAM_FAMILY = frozenset({
    "adam", "adamw", "adamw-no-bias-correction", "adamax", "nadam", "nadamw", "radam", "radamw",
    "lamb", "sparse-adam", "lazy-adam",
})

# torch-style group keys -> launcher names ("betas" expands to two names; eps is family-specific).
GROUP_KEY_NAMES: dict[str, str | tuple[str, ...]] = {
    "lr": "lr",
    "weight_decay": "weight-decay",
    "betas": ("adam-beta1", "adam-beta2"),
    "eps": "eps",
    "momentum": "momentum",
    "dampening": "dampening",
    "nesterov": "nesterov",
    "amsgrad": "amsgrad",
    "maximize": "maximize",
    "alpha": "rmsprop-alpha",
    "centered": "centered",
    "lr_decay": "lr-decay",
    "initial_accumulator_value": "initial-accumulator",
    "rho": "rho",
    "momentum_decay": "momentum-decay",
    "lambd": "lambd",
    "t0": "t0",
    "etas": ("rprop-eta-minus", "rprop-eta-plus"),
    "step_sizes": ("rprop-step-min", "rprop-step-max"),
    "bias_correction": "bias-correction",
    "initial_lr": "peak-lr",  # written by every LR scheduler: the lr its schedule scales (see `schedules`)
}

# Keys that select an implementation, not the mathematics (or that schedulers add).
IGNORED_GROUP_KEYS = frozenset({
    "params", "foreach", "fused", "capturable", "differentiable", "decoupled_weight_decay",
    "name", "param_names", "adam_w_mode", "set_grad_none",
})

# MindSpore nn.* optimizer attributes -> launcher names (lr and weight decay are read per parameter).
MINDSPORE_ATTRIBUTE_NAMES = {
    "beta1": "adam-beta1",
    "beta2": "adam-beta2",
    "eps": "eps",
    "epsilon": "eps",
    "momentum": "momentum",
    "dampening": "dampening",
    "nesterov": "nesterov",
    "use_nesterov": "nesterov",
    "use_amsgrad": "amsgrad",
    "loss_scale": "loss-scale",
    "decay": "rmsprop-alpha",
    "centered": "centered",
    "rho": "rho",
}

# Value that means "this knob is off": a key present on one side only is compared against it.
NEUTRAL_HPARAMS = {
    "loss-scale": 1.0,
    "nesterov": False,
    "amsgrad": False,
    "maximize": False,
    "dampening": 0.0,
    "weight-decay": 0.0,
    "momentum": 0.0,
    "centered": False,
}

# A key one side lacks that another key stands for: without a scheduler the peak lr is the lr.
STANDS_FOR = {"peak-lr": "lr"}


def hparam(hparams: Mapping[str, Any], key: str) -> Any:
    """The value of `key` in a group, what stands for it, or its neutral value."""
    if key in hparams:
        return hparams[key]
    if key in STANDS_FOR and STANDS_FOR[key] in hparams:
        return hparams[STANDS_FOR[key]]
    return NEUTRAL_HPARAMS.get(key)


# float32 resolution is ~1.2e-7: MindSpore stores lr 0.01 as 0.0099999998, which must compare equal.
HPARAM_RTOL = 1e-6


def eps_name(optimizer_type: str) -> str:
    return "adam-eps" if optimizer_type in ADAM_FAMILY else "eps"


def plain_value(value: Any) -> Any:
    """bool/int/float/str from a Python, numpy or framework scalar; tuples become lists."""
    if isinstance(value, (bool, str)) or value is None:
        return value
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain_value(item) for item in value]
    for reader in ("asnumpy", "detach"):
        if hasattr(value, reader):
            value = getattr(value, reader)()
            if reader == "detach":
                value = value.cpu().numpy()
            break
    if hasattr(value, "reshape") and getattr(value, "size", 0) == 1:
        value = value.reshape(()).item()
    elif hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (bool, int, float, str, list)):
        return value
    return repr(value)


def normalise_group_keys(group: Mapping[str, Any], optimizer_type: str) -> dict[str, Any]:
    """Launcher-spelled hyperparameters from a torch-style param group dict."""
    hparams: dict[str, Any] = {}
    for key, value in group.items():
        if key in IGNORED_GROUP_KEYS:
            continue
        names = GROUP_KEY_NAMES.get(key, key.replace("_", "-"))
        if key == "eps":
            names = eps_name(optimizer_type)
        value = plain_value(value)
        if isinstance(names, tuple):
            for name, item in zip(names, value if isinstance(value, list) else [value] * len(names)):
                hparams[name] = item
        else:
            hparams[names] = value
    return hparams


def torch_style_type(class_name: str, groups: Iterable[Mapping[str, Any]], table: Mapping[str, str], prefix: str) -> str:
    """Normalised type of a torch-style optimizer (torch.optim or mindspore.experimental.optim)."""
    base = table.get(class_name, f"{prefix}:{class_name}")
    for (overridden, key, value), replacement in TORCH_TYPE_OVERRIDES.items():
        if overridden == base and any(group.get(key) is value for group in groups):
            return replacement
    return base


def values_equal(left: Any, right: Any, rtol: float = HPARAM_RTOL) -> bool:
    """Hyperparameter equality: exact for bools/strings, relative tolerance for numbers."""
    if isinstance(left, bool) or isinstance(right, bool):
        return left == right
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        if math.isnan(left) or math.isnan(right):
            return math.isnan(left) and math.isnan(right)
        return abs(left - right) <= rtol * max(abs(left), abs(right))
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(values_equal(a, b, rtol) for a, b in zip(left, right))
    return left == right


def hparams_equal(left: Mapping[str, Any], right: Mapping[str, Any]) -> bool:
    keys = set(left) | set(right)
    return all(values_equal(hparam(left, k), hparam(right, k)) for k in keys)


def group_params_by_hparams(per_param: Iterable[tuple[str, dict[str, Any]]]) -> list[OptimizerGroup]:
    """Groups from (name, hparams) pairs: consecutive-or-not parameters with equal hparams share a group."""
    groups: list[OptimizerGroup] = []
    for name, hparams in per_param:
        for group in groups:
            if hparams_equal(group.hparams, hparams):
                group.params.append(name)
                break
        else:
            groups.append(OptimizerGroup(hparams=dict(hparams), params=[name]))
    return groups


def merge_equal_groups(groups: Iterable[OptimizerGroup]) -> list[OptimizerGroup]:
    """Groups with equal hyperparameters train identically; merge them so only real splits count."""
    merged: list[OptimizerGroup] = []
    for group in groups:
        for existing in merged:
            if hparams_equal(existing.hparams, group.hparams):
                existing.params.extend(group.params)
                break
        else:
            merged.append(OptimizerGroup(hparams=dict(group.hparams), params=list(group.params)))
    return merged


def torch_style_record(optimizer: Any, names: Mapping[int, str], table: Mapping[str, str], prefix: str) -> OptimizerRecord:
    """Record of an optimizer with torch-style `param_groups` (torch.optim, mindspore.experimental.optim)."""
    cls = type(optimizer)
    raw_groups = optimizer.param_groups
    optimizer_type = torch_style_type(cls.__name__, raw_groups, table, prefix)
    groups = [
        OptimizerGroup(
            hparams=normalise_group_keys(group, optimizer_type),
            params=[names[id(p)] for p in group["params"] if id(p) in names],
        )
        for group in raw_groups
    ]
    return OptimizerRecord(type=optimizer_type, native_type=f"{cls.__module__}.{cls.__qualname__}", groups=groups,
                           extra=schedule_record(optimizer))
