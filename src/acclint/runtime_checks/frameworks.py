"""Pick the framework adapter for a model without importing any framework ourselves.

An adapter wraps one model (and optionally its optimizer) and offers the few
framework-specific operations the neutral code needs: named tensors, host copies,
one forward/backward, one optimizer step, snapshots, RNG state and norms.
"""

from __future__ import annotations

import sys
from typing import Any

from acclint.runtime_checks.errors import FingerprintError


class Adapter:
    """What both adapters share: the tensors found at construction, keyed by identity."""

    _params: list
    _state: list

    def key(self, tensor: Any) -> int:
        return id(tensor)

    def named_params(self) -> list:
        return list(self._params)

    def named_state(self) -> list:
        return list(self._state)


def adapter_for(model: Any, optimizer: Any = None) -> Any:
    """TorchAdapter or MindSporeAdapter for `model`; FingerprintError for anything else."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(model, torch.nn.Module):
        from acclint.runtime_checks.torch_capture import TorchAdapter

        return TorchAdapter(model, optimizer)
    mindspore = sys.modules.get("mindspore")
    if mindspore is not None and isinstance(model, mindspore.nn.Cell):
        from acclint.runtime_checks.mindspore_capture import MindSporeAdapter

        return MindSporeAdapter(model, optimizer)
    kind = f"{type(model).__module__}.{type(model).__qualname__}"
    raise FingerprintError(f"the model must be a torch.nn.Module or a mindspore.nn.Cell, got {kind}")
