"""One msprobe dump.json read into compact nodes, in the order msprobe recorded them.

dump.json is `{"task", "level", "framework", "dump_data_dir", "data": {name: entry}}`, the entries
in execution order. An entry holds `input_args` / `input_kwargs` / `output` (forward), `input` /
`output` (backward), `parameters` (a module's weights at its forward, L0 and mix), or, for
`<module>.parameters_grad`, each parameter's gradient. A tensor is summarised by its statistics
(`Max`, `Min`, `Mean`, `Norm`) and, with `summary_mode` md5, a content checksum; a non-tensor
argument is `{"type", "value"}`.

The file can be hundreds of megabytes (every API call of a large model), so each tensor summary is
turned into a small slotted `Tensor` while the JSON decoder builds it (`object_hook`): the dicts it
replaces are freed at once and the peak stays near the size of the text itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from acclint.runtime_checks.dumps.node_names import NodeName, parse_node_name
from acclint.runtime_checks.model.errors import FingerprintError

STAT_KEYS = (("Max", "max"), ("Min", "min"), ("Mean", "mean"), ("Norm", "norm"))


class DumpError(FingerprintError):
    """A dump that cannot be read (absent, truncated, not msprobe's)."""


class Tensor:
    """One tensor's summary: normalised dtype, shape, statistics, md5 (None unless summary_mode md5)."""

    __slots__ = ("dtype", "shape", "stats", "md5")

    def __init__(self, dtype: str, shape: tuple[int, ...], stats: dict[str, float], md5: str | None) -> None:
        self.dtype, self.shape, self.stats, self.md5 = dtype, shape, stats, md5

    @property
    def numel(self) -> int:
        count = 1
        for size in self.shape:
            count *= size
        return count


class Scalar:
    """A non-tensor argument (an int, a float, a string, a dtype, None, ...)."""

    __slots__ = ("type", "value")

    def __init__(self, type_: str, value: Any) -> None:
        self.type, self.value = type_, value

    def __repr__(self) -> str:
        return f"{self.value!r}"


Value = Any  # Tensor, Scalar, None, or a list / dict of them (nested arguments)


@dataclass
class Node:
    """One entry of dump.json."""

    name: NodeName
    inputs: list[tuple[str, Value]] = field(default_factory=list)  # (argument path, leaf) in order
    outputs: list[tuple[str, Value]] = field(default_factory=list)
    parameters: dict[str, Tensor] = field(default_factory=dict)  # module weights at this forward call

    def tensors(self, which: str) -> list[tuple[str, Tensor]]:
        return [(path, value) for path, value in getattr(self, which) if isinstance(value, Tensor)]

    def scalars(self) -> list[tuple[str, Scalar]]:
        return [(path, value) for path, value in self.inputs if isinstance(value, Scalar)]


@dataclass
class DumpRank:
    """One rank's (or process's) dump of one step."""

    path: Path
    rank: str  # "rank0", "proc1234", "rank" (8.x)
    framework: str  # "torch" or "mindspore"
    level: str
    task: str
    nodes: list[Node]


def normalise_dtype(dtype: Any) -> str:
    """"torch.float32", "Float32" (MindSpore) and "float32" are one dtype: "float32"."""
    text = str(dtype)
    return text.rsplit(".", 1)[-1].lower()


def _compact(entry: dict[str, Any]) -> Any:
    """object_hook: a tensor summary becomes a Tensor, a non-tensor argument a Scalar."""
    if "Max" in entry or "md5" in entry or ("dtype" in entry and "shape" in entry):
        stats = {short: float(entry[key]) for key, short in STAT_KEYS if isinstance(entry.get(key), (int, float))}
        return Tensor(normalise_dtype(entry.get("dtype")), tuple(entry.get("shape") or ()), stats, entry.get("md5"))
    if "type" in entry and "value" in entry and len(entry) <= 3:
        return Scalar(str(entry["type"]), entry["value"])
    return entry


def _leaves(value: Value, path: str) -> Iterator[tuple[str, Value]]:
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}.{index}" if path else str(index))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}" if path else str(key))
    else:
        yield path, value


def _node(name: str, entry: Any) -> Node | None:
    parsed = parse_node_name(name)
    if parsed is None or not isinstance(entry, dict):
        return None
    node = Node(parsed)
    if parsed.direction == "parameters_grad":
        node.outputs = [(key, value) for key, value in _leaves(entry, "") if value is not None]
        return node
    node.inputs = list(_leaves(entry.get("input_args", entry.get("input", [])), "args"))
    node.inputs += list(_leaves(entry.get("input_kwargs", {}), "kwargs"))
    node.outputs = list(_leaves(entry.get("output", []), "out"))
    node.parameters = {k: v for k, v in (entry.get("parameters") or {}).items() if isinstance(v, Tensor)}
    return node


FRAMEWORKS = {"pytorch": "torch", "mindspore": "mindspore"}


def read_dump(path: Path, rank: str) -> DumpRank:
    """Read one dump.json. DumpError with what is wrong (never a traceback) when it cannot be read."""
    try:
        text = path.read_bytes()
    except OSError as error:
        raise DumpError(f"{path}: cannot read ({error.strerror or error})") from None
    try:
        document = json.loads(text, object_hook=_compact)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        position = getattr(error, "pos", None)
        where = f" at byte {position} of {len(text)}" if position is not None else ""
        raise DumpError(f"{path}: not a complete msprobe dump.json (invalid JSON{where}: "
                        f"{getattr(error, 'msg', error)}); was the run stopped while msprobe wrote it? "
                        "Dump that step again") from None
    del text
    if not isinstance(document, dict) or not isinstance(document.get("data"), dict):
        raise DumpError(f"{path}: not an msprobe dump.json (no \"data\" object)")
    framework = FRAMEWORKS.get(str(document.get("framework", "")).lower())
    if framework is None:
        raise DumpError(f"{path}: msprobe dump of framework {document.get('framework')!r}; "
                        "acclint reads PyTorch and MindSpore dumps")
    nodes = [node for name, entry in document["data"].items() if (node := _node(name, entry)) is not None]
    if not nodes:
        raise DumpError(f"{path}: the dump records nothing (\"data\" is empty). A MindSpore dump on CPU is empty "
                        "when msprobe's mint.norm has no CPU kernel: see docs/msprobe.md (hide mint.norm)")
    return DumpRank(path, rank, framework, str(document.get("level", "")), str(document.get("task", "")), nodes)
