"""The interface every framework adapter implements, and nothing framework-specific.

An adapter wraps one model (and optionally its optimizer) and offers the few
framework-specific operations the neutral code needs: named tensors, host copies,
one forward/backward, one optimizer step, snapshots, RNG state, norms, batch tensors and
forward hooks. Each framework has one module (torch_adapter, mindspore_adapter) with one
subclass; `frameworks` registers them. This module imports neither, so there is no cycle.
"""

from __future__ import annotations

import operator
import sys
from typing import Any


class Adapter:
    """What every adapter shares: the tensors found at construction, keyed by identity."""

    framework: str  # "torch", "mindspore": also the top-level module whose objects it handles
    model_type: str  # the model base class, from the framework module: "nn.Module", "nn.Cell"
    _params: list
    _state: list

    @classmethod
    def handles(cls, model: Any) -> bool:
        """Whether `model` belongs to this framework. Never imports the framework: a model of it
        can exist only if the user has imported it already."""
        module = sys.modules.get(cls.framework)
        return module is not None and isinstance(model, operator.attrgetter(cls.model_type)(module))

    def forward_hooks_unavailable(self) -> "str | None":
        """Why forward hooks cannot record in this framework build or mode (None: they can)."""
        return None

    def readable(self, tensor: Any) -> bool:
        """Whether the tensor holds data that can be copied to the host."""
        return True

    def summary_input(self, tensor: Any) -> Any:
        """What `records.summarize` reads for this tensor: by default a host copy."""
        return self.to_host(tensor)

    # (statistics, digest) of a list of tensors where they live (`records.summarize_many`), or None:
    # then `records.tensor_records` summarises host copies.
    summarize_many: "Any" = None

    def key(self, tensor: Any) -> int:
        return id(tensor)

    def named_params(self) -> list:
        return list(self._params)

    def named_state(self) -> list:
        return list(self._state)
