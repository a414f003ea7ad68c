"""One reported difference between two fingerprints, and the closed list of kinds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Binding contract: every mismatch carries exactly one of these kinds.
KINDS = (
    "param-count",
    "param-shape",
    "param-missing",
    "frozen",
    "optimizer-type",
    "optimizer-hparam",
    "optimizer-group",
    "init-weights",
    "loss",
    "grad-norm",
    "update",
    "train-mode",
    "env",
)


@dataclass
class Mismatch:
    kind: str
    name: str
    left: Any
    right: Any
    message: str
    stage: str = ""  # verdict section it belongs to (the kind "loss" appears in two)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown mismatch kind {self.kind!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "left": self.left, "right": self.right, "message": self.message}
