"""Environment: versions, determinism and reduced-precision settings in force, seeds.

Raw settings are recorded as found (for the reader). A few *effective* settings are derived
per device type so that a CUDA run and an NPU run can be compared on what actually applies
(TF32 on CUDA vs HF32 on Ascend); only those, and seeds within one framework, are compared.
"""

from __future__ import annotations

import os
import platform
import sys
from typing import Any, Callable, Mapping

from acclint.knowledge import table
from acclint.runtime_checks.model.optimizers import plain_value

# Environment variables that change numerics or determinism (with the Ascend overflow-mode and
# collective variables of knowledge/npu_modes.toml).
ENV_VARIABLES = (
    "HCCL_DETERMINISTIC",
    "CUBLAS_WORKSPACE_CONFIG",
    "CUDA_LAUNCH_BLOCKING",
    "ASCEND_LAUNCH_BLOCKING",
    "NCCL_ALGO",
    "PYTHONHASHSEED",
    "MS_DEV_JIT_ENABLE",
    *table("npu_modes")["runtime"]["variables"],
)

TORCH_SETTINGS: dict[str, Callable[[Any], Any]] = {
    "deterministic_algorithms": lambda torch: torch.are_deterministic_algorithms_enabled(),
    "deterministic_algorithms_warn_only": lambda torch: torch.is_deterministic_algorithms_warn_only_enabled(),
    "cudnn.deterministic": lambda torch: torch.backends.cudnn.deterministic,
    "cudnn.benchmark": lambda torch: torch.backends.cudnn.benchmark,
    "cudnn.allow_tf32": lambda torch: torch.backends.cudnn.allow_tf32,
    "cuda.matmul.allow_tf32": lambda torch: torch.backends.cuda.matmul.allow_tf32,
    "float32_matmul_precision": lambda torch: torch.get_float32_matmul_precision(),
    # Only present once torch_npu is imported by the user.
    "npu.matmul.allow_hf32": lambda torch: torch.npu.matmul.allow_hf32,
    "npu.conv.allow_hf32": lambda torch: torch.npu.conv.allow_hf32,
}



def _npu_option(torch_npu: Any, name: str) -> Any:
    """A torch_npu compile option as set (`set_option`), or None when never set."""
    value = torch_npu._C._npu_getOption(name)
    value = value.decode() if isinstance(value, bytes) else value
    return value or None


# Read only when the user imported torch_npu (passed the module, not torch).
TORCH_NPU_SETTINGS: dict[str, Callable[[Any], Any]] = {
    "npu.precision_mode": lambda torch_npu: _npu_option(torch_npu, "ACL_PRECISION_MODE"),
    "npu.op_select_impl_mode": lambda torch_npu: _npu_option(torch_npu, "ACL_OP_SELECT_IMPL_MODE"),
    "npu.soc_name": lambda torch_npu: torch_npu.npu.get_device_name(),
}


def soc_default_precision_mode(soc_name: Any) -> Any:
    """The precision mode CANN applies when nothing sets it, for a SoC name such as "Ascend910B3"."""
    if not isinstance(soc_name, str):
        return None
    for family in table("npu_modes")["families"].values():
        if soc_name.startswith(tuple(family["soc_prefixes"])):
            return family["default"]
    return None


def precision_mode_lowers(mode: Any) -> Any:
    """True when an Ascend precision mode runs float32 matmuls in a 16-bit format; None if unknown."""
    entry = table("npu_modes")["modes"].get(mode.strip().lower()) if isinstance(mode, str) else None
    return None if entry is None else bool(entry["lowers"])


def npu_fp32_matmul_16bit(settings: Mapping[str, Any]) -> Any:
    """From recorded settings: the mode set, else the SoC's default."""
    mode = settings.get("npu.precision_mode") or soc_default_precision_mode(settings.get("npu.soc_name"))
    return precision_mode_lowers(mode)


# device type -> whether float32 matmuls run in a 16-bit format (fp16/bf16 inputs), beyond TF32/HF32:
# CUDA only with set_float32_matmul_precision("medium") (bf16); Ascend by its precision mode.
TORCH_FP32_MATMUL_16BIT: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "cuda": lambda s: s.get("float32_matmul_precision") == "medium" if "float32_matmul_precision" in s else None,
    "npu": npu_fp32_matmul_16bit,
}

# device type -> how to read "float32 matmul/conv run in a reduced format" from the raw settings.
TORCH_REDUCED_MATMUL: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "cuda": lambda s: bool(s.get("cuda.matmul.allow_tf32")) or s.get("float32_matmul_precision", "highest") != "highest",
    "npu": lambda s: s.get("npu.matmul.allow_hf32"),
}
TORCH_REDUCED_CONV: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "cuda": lambda s: s.get("cudnn.allow_tf32"),
    "npu": lambda s: s.get("npu.conv.allow_hf32"),
}

MINDSPORE_CONTEXT_KEYS = ("deterministic", "device_target", "mode", "jit_level", "ascend_config")  # device_target before ascend_config
ASCEND_ONLY_CONTEXT_KEYS = frozenset({"ascend_config"})

def _collect(table: Mapping[str, Callable[[Any], Any]], module: Any) -> dict[str, Any]:
    found = {}
    for name, getter in table.items():
        try:
            found[name] = plain_value(getter(module))
        except Exception:  # a setting this build does not have is simply not recorded
            continue
    return found


def _common(framework_versions: dict[str, Any]) -> dict[str, Any]:
    import numpy

    import acclint

    versions = {
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "acclint": getattr(acclint, "__version__", None),
    }
    versions.update({k: v for k, v in framework_versions.items() if v is not None})
    return {
        "versions": versions,
        "variables": {name: os.environ[name] for name in ENV_VARIABLES if name in os.environ},
    }


def torch_environment(torch: Any, device_type: str) -> dict[str, Any]:
    torch_npu = sys.modules.get("torch_npu")  # never imported here: only read if the user has it
    env = _common({
        "torch": torch.__version__,
        "cuda": getattr(torch.version, "cuda", None),
        "cudnn": _safe(lambda: torch.backends.cudnn.version()) if device_type == "cuda" else None,
        "torch_npu": getattr(torch_npu, "__version__", None),
    })
    settings = _collect(TORCH_SETTINGS, torch)
    if torch_npu is not None:
        settings.update(_collect(TORCH_NPU_SETTINGS, torch_npu))
    env["settings"] = settings
    env["seed"] = _safe(torch.initial_seed)
    env["effective"] = {
        "deterministic": settings.get("deterministic_algorithms"),
        "reduced-precision-matmul": _derive(TORCH_REDUCED_MATMUL, device_type, settings),
        "reduced-precision-conv": _derive(TORCH_REDUCED_CONV, device_type, settings),
        "fp32-matmul-16-bit": _derive(TORCH_FP32_MATMUL_16BIT, device_type, settings),
    }
    return env


def mindspore_environment(ms: Any) -> dict[str, Any]:
    env = _common({"mindspore": ms.__version__})
    settings = {}
    for key in MINDSPORE_CONTEXT_KEYS:
        if key in ASCEND_ONLY_CONTEXT_KEYS and settings.get("context.device_target") != "Ascend":
            continue  # reading it elsewhere logs a MindSpore warning, and it applies to Ascend only
        value = _safe(lambda key=key: ms.get_context(key))
        if value is not None:
            settings[f"context.{key}"] = plain_value(value) if not isinstance(value, dict) else {
                k: plain_value(v) for k, v in value.items()
            }
    env["settings"] = settings
    env["seed"] = _safe(ms.get_seed)
    reduced = None
    if settings.get("context.device_target") == "Ascend":
        precision_mode = (settings.get("context.ascend_config") or {}).get("precision_mode")
        reduced = precision_mode_lowers(precision_mode)
    deterministic = settings.get("context.deterministic")
    env["effective"] = {
        "deterministic": None if deterministic is None else deterministic == "ON",
        "reduced-precision-matmul": reduced,
        "reduced-precision-conv": reduced,
        # The default differs per SoC and MindSpore version: only a mode written down is known.
        "fp32-matmul-16-bit": reduced,
    }
    return env


def _derive(table: Mapping[str, Callable[[Mapping[str, Any]], Any]], device_type: str, settings: Mapping[str, Any]) -> Any:
    rule = table.get(device_type)
    return None if rule is None else rule(settings)


def _safe(getter: Callable[[], Any]) -> Any:
    try:
        return getter()
    except Exception:
        return None
