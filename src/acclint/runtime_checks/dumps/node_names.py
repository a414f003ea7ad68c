"""msprobe node names, split into what they say.

    Module.fc1.Linear.forward.0           a module call (PyTorch; MindSpore writes Cell.)
    Module.fc1.Linear.parameters_grad     its parameters' gradients (26.x adds ".0")
    Functional.linear.0.forward           an API call (Functional, Tensor, Torch, NPU, Mint, Primitive, ...)

A module path may hold dots itself (`layers.0.mlp`), so names are read from the right.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

MODULE_PREFIXES = ("Module", "Cell")
DIRECTIONS = ("forward", "backward")
_COUNT = re.compile(r"\d+")


class NodeName(NamedTuple):  # a tuple, not a dataclass: a large dump has hundreds of thousands
    raw: str
    prefix: str  # "Module", "Cell", "Functional", "Tensor", ...
    direction: str  # "forward", "backward" or "parameters_grad"
    call: int  # the n-th call of this module / API in the step
    path: str = ""  # modules: the module path ("fc1", "layers.0.mlp"); "" for the model itself
    cls: str = ""  # modules: the class name
    api: str = ""  # APIs: the API name ("linear", "add_", "nn.functional.gelu")

    @property
    def is_module(self) -> bool:
        return self.prefix in MODULE_PREFIXES

    @property
    def label(self) -> str:
        """How the verdict names the node: msprobe's own name without the direction (and a module's first call)."""
        if self.is_module:
            where = f"{self.path}." if self.path else ""
            return f"{self.prefix}.{where}{self.cls}" + (f".{self.call}" if self.call else "")
        return f"{self.prefix}.{self.api}.{self.call}"


@lru_cache(maxsize=1 << 20)  # both sides of a same-framework comparison share their names
def parse_node_name(name: str) -> NodeName | None:
    """The parts of an msprobe node name; None for a name of another shape (left out, not guessed)."""
    parts = name.split(".")
    if len(parts) < 3:
        return None
    prefix = parts[0]
    if prefix in MODULE_PREFIXES:
        if "parameters_grad" in parts[-2:]:
            at = len(parts) - 1 - parts[::-1].index("parameters_grad")
            call = int(parts[at + 1]) if at + 1 < len(parts) and _COUNT.fullmatch(parts[at + 1]) else 0
            body, direction = parts[1:at], "parameters_grad"
        elif parts[-2] in DIRECTIONS and _COUNT.fullmatch(parts[-1]):
            body, direction, call = parts[1:-2], parts[-2], int(parts[-1])
        else:
            return None
        if not body:
            return None
        return NodeName(name, prefix, direction, call, path=".".join(body[:-1]), cls=body[-1])
    if parts[-1] in DIRECTIONS and _COUNT.fullmatch(parts[-2]) and len(parts) >= 4:
        return NodeName(name, prefix, parts[-1], int(parts[-2]), api=".".join(parts[1:-2]))
    return None
