"""Cross-framework parameter names: the built-in table and user mapping files.

The common spelling is torch's. MindSpore names are rewritten by the class of the cell that
owns the parameter (so a user's own `gamma` in some custom cell is left alone), then a user
mapping file can rename anything the table does not know.

Mapping file (YAML), every section optional; it is applied to both sides:

    names:      {native.full.name: common.full.name}   # exact renames
    prefixes:   {native.prefix.: common.prefix.}        # module-path renames (longest first)
    cells:      {CellClass: {native_leaf: common_leaf}} # per owning class, like dump tools' layer maps
    ignore:     [common.name.or.glob*]                  # left out of comparisons and transfers

A file that is a flat `native: common` dictionary is read as `names`.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from acclint.runtime_checks.model.errors import FingerprintError

# MindSpore owning cell class (or any base class of it) -> {MindSpore leaf: torch leaf}.
MINDSPORE_LEAF_RENAMES: dict[str, dict[str, str]] = {
    "_BatchNorm": {"gamma": "weight", "beta": "bias", "moving_mean": "running_mean", "moving_variance": "running_var"},
    "SyncBatchNorm": {"gamma": "weight", "beta": "bias", "moving_mean": "running_mean", "moving_variance": "running_var"},
    "LayerNorm": {"gamma": "weight", "beta": "bias"},
    "GroupNorm": {"gamma": "weight", "beta": "bias"},
    "_InstanceNorm": {"gamma": "weight", "beta": "bias"},
    "InstanceNorm1d": {"gamma": "weight", "beta": "bias"},
    "InstanceNorm2d": {"gamma": "weight", "beta": "bias"},
    "InstanceNorm3d": {"gamma": "weight", "beta": "bias"},
    "Embedding": {"embedding_table": "weight"},
    "EmbeddingLookup": {"embedding_table": "weight"},
}

# Common leaves that are running statistics: state, not parameters, in both frameworks.
STATE_LEAVES = frozenset({"running_mean", "running_var"})

# Integer bookkeeping buffers with no counterpart on the other side.
IGNORED_LEAVES = frozenset({"num_batches_tracked"})

BUILTIN_RENAMES = {"torch": {}, "mindspore": MINDSPORE_LEAF_RENAMES}

# Attributes through which wrappers hold the user's module: torch.compile's OptimizedModule, FSDP
# (1 and its activation-checkpoint wrapper). Never a user's own name, so dropped wherever they occur.
WRAPPER_SEGMENTS = frozenset({"_orig_mod", "_fsdp_wrapped_module", "_checkpoint_wrapped_module"})
# A whole-model wrapper's attribute (DDP, DataParallel, Float16Module): dropped when it prefixes every name.
WHOLE_MODEL_PREFIX = "module."


def without_wrappers(name: str) -> str:
    """`name` without the wrapper attributes in its path: a compiled, FSDP-wrapped or checkpointed
    module's parameters are the plain module's."""
    if not any(segment in name for segment in WRAPPER_SEGMENTS):
        return name
    return ".".join(part for part in name.split(".") if part not in WRAPPER_SEGMENTS)


def whole_model_prefix(names: Iterable[str]) -> str | None:
    """The wrapper prefix every name carries (a model recorded through its DDP wrapper), if any."""
    names = list(names)
    return WHOLE_MODEL_PREFIX if names and all(n.startswith(WHOLE_MODEL_PREFIX) for n in names) else None


def builtin_common_name(framework: str, native_name: str, owner_classes: Iterable[str]) -> str:
    """The common name of a parameter given the class names in its owner's MRO (most specific first)."""
    table = BUILTIN_RENAMES.get(framework, {})
    path, dot, leaf = native_name.rpartition(".")
    for class_name in owner_classes:
        renames = table.get(class_name)
        if renames and leaf in renames:
            return f"{path}{dot}{renames[leaf]}"
    return native_name


def leaf(name: str) -> str:
    return name.rpartition(".")[2]


@dataclass
class NameMapping:
    """A user mapping file (see module docstring)."""

    names: dict[str, str] = field(default_factory=dict)
    prefixes: dict[str, str] = field(default_factory=dict)
    cells: dict[str, dict[str, str]] = field(default_factory=dict)
    ignore: list[str] = field(default_factory=list)
    source: str = "<mapping>"

    def common_name(self, native_name: str, module: str, builtin_name: str) -> str:
        """Apply the user's rules on top of the built-in name."""
        if native_name in self.names:
            return self.names[native_name]
        name = without_wrappers(builtin_name)
        renames = self.cells.get(module)
        if renames and leaf(native_name) in renames:
            path, dot, _ = builtin_name.rpartition(".")
            name = f"{path}{dot}{renames[leaf(native_name)]}"
        for prefix in sorted(self.prefixes, key=len, reverse=True):
            if name.startswith(prefix):
                return self.prefixes[prefix] + name[len(prefix) :]
        return name

    def module_name(self, native_path: str) -> str:
        """The common name of a module: an exact rename, else the longest prefix rename ("layers.0."
        also renames the module "layers.0" itself)."""
        if native_path in self.names:
            return self.names[native_path]
        native_path = without_wrappers(native_path)
        dotted = native_path + "."
        for prefix in sorted(self.prefixes, key=len, reverse=True):
            if dotted.startswith(prefix):
                return (self.prefixes[prefix] + dotted[len(prefix) :]).rstrip(".")
        return native_path

    def ignored(self, common_name: str) -> bool:
        return any(fnmatch.fnmatchcase(common_name, pattern) for pattern in self.ignore)

    def index(self, items: Iterable[Any], where: str) -> dict[str, Any]:
        """Items (anything with native_name, module, name) by common name, ignored ones left out.

        Two items mapping to one name would silently pair the wrong tensors, so that is an error;
        `where` says which side, for the message."""
        index: dict[str, Any] = {}
        for item in items:
            name = self.common_name(item.native_name, item.module, item.name)
            if self.ignored(name):
                continue
            if name in index:
                raise FingerprintError(
                    f"in {where}, {index[name].native_name} and {item.native_name} both map to {name!r}; "
                    "fix the mapping"
                )
            index[name] = item
        return index


_SECTIONS = {"names", "prefixes", "cells", "ignore", "version"}


def load_mapping(mapping: "NameMapping | Mapping[str, Any] | str | Path | None") -> NameMapping:
    """A NameMapping from a file path, a dict with the file's structure, or None (empty)."""
    if mapping is None:
        return NameMapping()
    if isinstance(mapping, NameMapping):
        return mapping
    if isinstance(mapping, (str, Path)):
        source = str(mapping)
        try:
            import yaml

            data = yaml.safe_load(Path(mapping).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise FingerprintError(f"mapping file {source}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise FingerprintError(f"mapping file {source}: cannot read: {exc}") from None
        except yaml.YAMLError as exc:
            raise FingerprintError(f"mapping file {source}: not valid YAML: {exc}") from None
    else:
        source, data = "<mapping>", mapping
    return _parse_mapping(data if data is not None else {}, source)


def _parse_mapping(data: Any, source: str) -> NameMapping:
    if not isinstance(data, Mapping):
        raise FingerprintError(f"mapping file {source}: expected a YAML mapping at the top level")
    if not set(data) & _SECTIONS:  # flat `native: common` file
        data = {"names": data}
    unknown = set(data) - _SECTIONS
    if unknown:
        raise FingerprintError(
            f"mapping file {source}: unknown section(s) {sorted(unknown)}; expected {sorted(_SECTIONS - {'version'})}"
        )
    cells = data.get("cells") or {}
    if not isinstance(cells, Mapping) or not all(isinstance(v, Mapping) for v in cells.values()):
        raise FingerprintError(f"mapping file {source}: 'cells' must map a class name to {{native_leaf: common_leaf}}")
    ignore = data.get("ignore") or []
    if isinstance(ignore, str) or not isinstance(ignore, list):
        raise FingerprintError(f"mapping file {source}: 'ignore' must be a list of names or glob patterns")
    return NameMapping(
        names=_string_map(data.get("names"), "names", source),
        prefixes=_string_map(data.get("prefixes"), "prefixes", source),
        cells={str(cls): _string_map(renames, f"cells.{cls}", source) for cls, renames in cells.items()},
        ignore=[str(pattern) for pattern in ignore],
        source=source,
    )


def _string_map(value: Any, section: str, source: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise FingerprintError(f"mapping file {source}: '{section}' must be a mapping of name: name")
    result = {}
    for key, target in value.items():
        if not isinstance(key, str) or not isinstance(target, str):
            raise FingerprintError(f"mapping file {source}: '{section}' entry {key!r}: {target!r} must be two strings")
        result[key] = target
    return result


def close_matches(name: str, candidates: Iterable[str]) -> list[str]:
    import difflib

    return difflib.get_close_matches(name, list(candidates), n=2, cutoff=0.75)
