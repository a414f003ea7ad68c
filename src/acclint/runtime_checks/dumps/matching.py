"""Which node of one dump is which node of the other, across frameworks, without a mapping file.

A MindSpore dump names modules `Cell.<path>.<Class>` where PyTorch writes `Module.<path>.<Class>`,
and some classes under another name (Dense for Linear): both are read through the class table of
knowledge/msprobe_dumps.toml. Modules are matched by path, direction and call number, not by
class, so a module whose class changed (ReLU -> GELU) is matched and its class named as the cause.
APIs are matched by family, name and call number.

Where names differ for other reasons, msprobe's own mapping files are accepted:

    cell mapping (compare -cm):    {"fc1.Dense": "fc1.Linear", ...}           path.Class renames
    layer mapping (compare -lm):   {Class: {child: child}, TopLayer: {...}}   per-parent child renames

and acclint's `prefixes` / `ignore` sections (runtime_checks.model.names).
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

from acclint.knowledge import table
from acclint.runtime_checks.dumps.node_names import NodeName
from acclint.runtime_checks.dumps.reader import DumpError, Node

Key = tuple[Any, ...]
TOP_LAYER = "TopLayer"


def canonical_class(cls: str) -> str:
    return table("msprobe_dumps")["classes"].get(cls, cls)


def canonical_prefix(prefix: str) -> str:
    return table("msprobe_dumps")["api_prefixes"].get(prefix, prefix)


class DumpMapping:
    """A user's mapping file for dumps (msprobe cell or layer mapping, or acclint's prefixes / ignore)."""

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        data = data or {}
        self.cells: dict[str, str] = {}
        self.layers: dict[str, dict[str, str]] = {}
        self.prefixes: dict[str, str] = dict(data.get("prefixes") or {})
        self.ignore: list[str] = list(data.get("ignore") or [])
        for key, value in data.items():
            if key in ("prefixes", "ignore", "names", "cells"):
                continue
            if isinstance(value, dict):
                self.layers[str(key)] = {str(a): str(b) for a, b in value.items()}
            elif isinstance(value, str):
                self.cells[str(key)] = value
        self.cells.update({str(a): str(b) for a, b in (data.get("names") or {}).items()})

    def path_and_class(self, path: str, cls: str, classes: dict[str, str]) -> tuple[str, str]:
        """`path`, `cls` after the mapping; `classes`: module path -> class on this side (for layer maps)."""
        if self.layers:
            path = self._layer_renamed(path, classes)
        for old, new in sorted(self.prefixes.items(), key=lambda item: -len(item[0])):
            if f"{path}.".startswith(old if old.endswith(".") else f"{old}."):
                path = new.rstrip(".") + path[len(old.rstrip(".")):]
                break
        if self.cells:
            whole = f"{path}.{cls}" if path else cls
            renamed = self.cells.get(whole)
            if renamed is None:  # as msprobe does: the first entry found inside the name is replaced
                renamed = next((whole.replace(a, b, 1) for a, b in self.cells.items() if a in whole), whole)
            path, _, cls = renamed.rpartition(".")
        return path, cls

    def _layer_renamed(self, path: str, classes: dict[str, str]) -> str:
        parts = path.split(".") if path else []
        renamed = []
        for index, part in enumerate(parts):
            parent = TOP_LAYER if index == 0 else classes.get(".".join(parts[:index]), "")
            renamed.append(self.layers.get(parent, {}).get(part, part))
        return ".".join(renamed)

    def ignored(self, label: str) -> bool:
        return any(fnmatch.fnmatchcase(label, pattern) for pattern in self.ignore)


def load_dump_mapping(path: str | Path | None) -> DumpMapping:
    if path is None:
        return DumpMapping()
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise DumpError(f"{path}: cannot read the mapping file ({error})") from None
    if not isinstance(data, dict):
        raise DumpError(f"{path}: a mapping file is a YAML mapping (cell mapping, layer mapping or acclint's)")
    return DumpMapping(data)


class NodeKeys:
    """The matching key of every node of one side."""

    def __init__(self, nodes: list[Node], mapping: DumpMapping) -> None:
        self.mapping = mapping
        self.classes = {n.name.path: n.name.cls for n in nodes if n.name.is_module}
        self._cache: dict[str, tuple[Key, str]] = {}

    def key(self, name: NodeName) -> Key:
        return self._resolved(name)[0]

    def cls(self, name: NodeName) -> str:
        """The canonical class of a module node ("" for an API)."""
        return self._resolved(name)[1]

    def ignored(self, name: NodeName) -> bool:
        return bool(self.mapping.ignore) and self.mapping.ignored(name.label)

    def _resolved(self, name: NodeName) -> tuple[Key, str]:
        found = self._cache.get(name.raw)
        if found is None:
            if name.is_module:
                path, cls = self.mapping.path_and_class(name.path, name.cls, self.classes)
                found = (("module", path, name.direction, name.call), canonical_class(cls))
            else:
                found = (("api", canonical_prefix(name.prefix), name.api, name.direction, name.call), "")
            self._cache[name.raw] = found
        return found
