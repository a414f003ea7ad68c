"""Module settings that change numerics without changing weights, in one spelling and convention.

A LayerNorm epsilon, a BatchNorm momentum, a dropout probability, a GELU approximation, a
LeakyReLU slope or whether an InstanceNorm learns an affine transform can
differ between two ports with identical weights: MindSpore's `nn.LayerNorm` defaults to
epsilon 1e-7 (torch 1e-5), its `nn.GELU()` to the tanh approximation (torch: exact), its
BatchNorm momentum is torch's `1 - momentum`, and its Dropout takes `keep_prob = 1 - p`.
Each setting is recorded as torch spells and means it, so equal numerics compare equal.

The tables are data: framework -> class name (anywhere in the module's MRO, most specific
first) -> {setting: attribute name, or a reader for settings stored another way}.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Union

from acclint.knowledge.api_differences import load, selected_version
from acclint.runtime_checks.model.fingerprint import ModuleRecord
from acclint.runtime_checks.model.optimizers import plain_value

Reader = Union[str, Callable[[Any], Any]]


def _mindspore_dropout_p(cell: Any) -> Any:
    # nn.Dropout(p=...) stores p; nn.Dropout(keep_prob=...) stores p=None and keep_prob.
    p = getattr(cell, "p", None)
    if p is not None:
        return p
    keep_prob = getattr(cell, "keep_prob", None)
    return None if keep_prob is None else 1.0 - float(plain_value(keep_prob))


def _mindspore_instance_affine(cell: Any) -> Any:
    # nn.InstanceNorm*d(affine=False) keeps gamma/beta but does not train them.
    gamma = getattr(cell, "gamma", None)
    return None if gamma is None else bool(getattr(gamma, "requires_grad", True))


def _gelu_approximate(module: Any) -> Any:
    # torch and MindSpore >= 2.3 store "none" / "tanh"; older MindSpore a bool (True = tanh).
    value = getattr(module, "approximate", None)
    if isinstance(value, bool):
        return "tanh" if value else "none"
    return value


SETTINGS: dict[str, dict[str, dict[str, Reader]]] = {
    "torch": {
        "LayerNorm": {"eps": "eps"},
        "RMSNorm": {"eps": "eps"},  # None means the dtype's machine epsilon
        "GroupNorm": {"eps": "eps"},
        "_InstanceNorm": {"eps": "eps", "affine": "affine"},
        "_NormBase": {"eps": "eps", "momentum": "momentum"},  # BatchNorm*, SyncBatchNorm
        "LeakyReLU": {"negative_slope": "negative_slope"},
        "_DropoutNd": {"p": "p"},
        "GELU": {"approximate": "approximate"},
        "Embedding": {"padding_idx": "padding_idx", "max_norm": "max_norm"},
    },
    "mindspore": {
        "LayerNorm": {"eps": "epsilon"},  # nn.LayerNorm(epsilon=1e-7 by default)
        "LayerNormExt": {"eps": "eps"},  # mint.nn.LayerNorm
        "GroupNorm": {"eps": "eps"},
        # nn.BatchNorm*d(momentum=0.9) stores self.momentum = 1 - 0.9: torch's convention already;
        # mint.nn.BatchNorm*d takes and stores torch's convention.
        "_BatchNorm": {"eps": "eps", "momentum": "momentum"},
        "_InstanceNorm": {"eps": "eps", "affine": _mindspore_instance_affine},  # nn.InstanceNorm*d(affine=True)
        "LeakyReLU": {"negative_slope": "alpha"},  # nn.LeakyReLU(alpha=0.2 by default)
        "Dropout": {"p": _mindspore_dropout_p},
        "DropoutExt": {"p": "p"},  # mint.nn.Dropout
        "GELU": {"approximate": _gelu_approximate},
        "Embedding": {"padding_idx": "padding_idx", "max_norm": "max_norm"},
        "EmbeddingExt": {"padding_idx": "padding_idx", "max_norm": "max_norm"},  # mint.nn.Embedding
    },
}

# Any framework, for classes the tables do not name (user code, HF, MindFormers): a class name
# ending with the key, and the attributes that hold the setting, first found wins.
BY_SUFFIX: dict[str, dict[str, tuple[str, ...]]] = {
    "RMSNorm": {"eps": ("eps", "epsilon", "variance_epsilon")},
    "LayerNorm": {"eps": ("eps", "epsilon", "variance_epsilon")},
    "Attention": {"scale": ("scale", "scaling", "softmax_scale", "scale_factor")},
}

# (setting, part of either side's class name) -> said with a mismatch of it when one side is
# MindSpore: the MindSpore default or convention behind it (torch vs torch: not said).
MINDSPORE_NOTES = {
    ("eps", "LayerNorm"): "MindSpore nn.LayerNorm defaults to epsilon=1e-7, torch nn.LayerNorm to eps=1e-5",
    ("approximate", "GELU"): "MindSpore nn.GELU() defaults to the tanh approximation (approximate=True), "
    "torch nn.GELU() is exact (approximate='none'): pass approximate=False on the MindSpore side",
    ("momentum", "BatchNorm"): "compared in torch's convention: torch momentum m is MindSpore nn.BatchNorm momentum 1 - m",
    ("p", "Dropout"): "compared as torch's drop probability: MindSpore keep_prob k is p = 1 - k",
}


def mindspore_note(setting: str, modules: Iterable[str]) -> str:
    """What a mismatch of `setting` (torch's spelling) between modules of these class names owes to
    MindSpore: the notes above, else the documented API difference (knowledge/api_differences.toml),
    worded as ACL711 words it, with its page."""
    modules = list(modules)
    note = next((text for (name, cls), text in MINDSPORE_NOTES.items()
                 if name == setting and any(cls in module for module in modules)), "")
    if note:
        return note
    for row in load(selected_version()):
        classes = {row.mindspore.rsplit(".", 1)[-1], row.torch.rsplit(".", 1)[-1]}
        if row.kind == "default-value" and row.torch_parameter == setting and classes & set(modules):
            return f"{row.consequence} [{row.page}]"
    return ""


def module_settings(framework: str, class_names: Iterable[str], module: Any) -> dict[str, Any]:
    """The settings of one module (class names: its MRO, most specific first); {} when it has none."""
    names = list(class_names)
    table = SETTINGS.get(framework, {})
    readers: Mapping[str, Reader] | None = next((table[name] for name in names if name in table), None)
    found: dict[str, Any] = {}
    if readers is not None:
        for setting, reader in readers.items():
            if callable(reader):
                found[setting] = plain_value(reader(module))
            elif hasattr(module, reader):
                found[setting] = plain_value(getattr(module, reader))
        return found
    for suffix, settings in BY_SUFFIX.items():
        if names and (names[0].endswith(suffix) if suffix != "Attention" else suffix in names[0]):
            for setting, attributes in settings.items():
                value = next((getattr(module, a) for a in attributes if _is_number(getattr(module, a, None))), None)
                if value is not None:
                    found[setting] = plain_value(value)
    return found


def module_records(framework: str, modules: Iterable[tuple[str, Any]]) -> list[ModuleRecord]:
    """Records for the (native path, module) pairs that have settings."""
    records = []
    for name, module in modules:
        classes = [cls.__name__ for cls in type(module).__mro__]
        settings = module_settings(framework, classes, module)
        if settings:
            records.append(ModuleRecord(name=name, module=classes[0], settings=settings))
    return records


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
