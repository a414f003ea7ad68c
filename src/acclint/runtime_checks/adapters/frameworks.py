"""The adapter registry: pick the framework adapter for a model without importing any framework.

Adapters import only the `adapter` base module; this registry imports the adapters. Importing
an adapter module imports no framework (each imports its framework when it wraps a model).
"""

from __future__ import annotations

from typing import Any

from acclint.runtime_checks.adapters.adapter import Adapter
from acclint.runtime_checks.model.errors import FingerprintError
from acclint.runtime_checks.adapters.mindspore_adapter import MindSporeAdapter
from acclint.runtime_checks.adapters.torch_adapter import TorchAdapter

# Tried in order; each checks only frameworks the user has already imported.
ADAPTERS: tuple[type[Adapter], ...] = (TorchAdapter, MindSporeAdapter)


def adapter_for(model: Any, optimizer: Any = None) -> Any:
    """The registered adapter for `model`; FingerprintError for anything else."""
    for adapter in ADAPTERS:
        if adapter.handles(model):
            return adapter(model, optimizer)
    kind = f"{type(model).__module__}.{type(model).__qualname__}"
    raise FingerprintError(f"the model must be a torch.nn.Module or a mindspore.nn.Cell, got {kind}")
