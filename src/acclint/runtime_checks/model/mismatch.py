"""One reported difference between two fingerprints, and the closed list of kinds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Binding contract: every mismatch carries exactly one of these kinds.
KINDS = (
    "batch",
    "param-count",
    "param-shape",
    "param-missing",
    "frozen",
    "optimizer-type",
    "optimizer-hparam",
    "optimizer-group",
    "init-weights",
    "module-config",
    "activation",
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
    consequence_of: str | None = None  # the kind of the earlier difference this one follows from

    def __post_init__(self) -> None:
        for kind in (self.kind, self.consequence_of):
            if kind is not None and kind not in KINDS:
                raise ValueError(f"unknown mismatch kind {kind!r}")

    @property
    def is_cause(self) -> bool:
        return self.consequence_of is None

    def to_dict(self) -> dict[str, Any]:
        data = {"kind": self.kind, "name": self.name, "left": self.left, "right": self.right, "message": self.message}
        if self.consequence_of is not None:
            data["consequence_of"] = self.consequence_of
        return data
