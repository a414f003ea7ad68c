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
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acclint.runtime_checks.dumps.node_names import NodeName, parse_node_name
from acclint.runtime_checks.model.errors import FingerprintError

STAT_NAMES = ("max", "min", "mean", "norm")  # the order of Tensor.stats, msprobe's Max, Min, Mean, Norm


class DumpError(FingerprintError):
    """A dump that cannot be read (absent, truncated, not msprobe's)."""


class Tensor:
    """One tensor's summary: normalised dtype, shape, statistics (max, min, mean, norm; None where not
    recorded), md5 (None unless summary_mode md5). Tuples, not dicts: a large dump holds millions."""

    __slots__ = ("dtype", "shape", "stats", "md5")

    def __init__(self, dtype: str, shape: tuple[int, ...], stats: tuple[float | None, ...], md5: str | None) -> None:
        self.dtype, self.shape, self.stats, self.md5 = dtype, shape, stats, md5

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def named_stats(self) -> dict[str, float]:
        return {name: value for name, value in zip(STAT_NAMES, self.stats) if value is not None}


class Scalar:
    """A non-tensor argument (an int, a float, a string, a dtype, None, ...)."""

    __slots__ = ("type", "value")

    def __init__(self, type_: str, value: Any) -> None:
        self.type, self.value = type_, value

    def __repr__(self) -> str:
        return f"{self.value!r}"


@dataclass
class Node:
    """One entry of dump.json. `inputs` is {"args": [...], "kwargs": {...}} and `outputs` {"out": [...]}
    (for parameters_grad {parameter: [gradient]}), nested as msprobe wrote them, with Tensor and
    Scalar leaves: paths ("args.0", "kwargs.alpha") are spelled only for what differs."""

    name: NodeName
    inputs: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    parameters: dict[str, Tensor] = field(default_factory=dict)  # module weights at this forward call


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


_DTYPES: dict[Any, str] = {}  # raw spelling -> normalised: a dump has a handful of dtypes and millions of tensors


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _compact(entry: dict[str, Any]) -> Any:
    """object_hook: a tensor summary becomes a Tensor, a non-tensor argument a Scalar."""
    get = entry.get
    if "Max" in entry or "md5" in entry or ("dtype" in entry and "shape" in entry):
        raw = get("dtype")
        dtype = _DTYPES.get(raw)
        if dtype is None:
            dtype = _DTYPES.setdefault(raw, normalise_dtype(raw))
        stats = high, low, mean, norm = get("Max"), get("Min"), get("Mean"), get("Norm")
        if not (type(high) is float and type(low) is float and type(mean) is float and type(norm) is float):
            stats = tuple(_number(value) for value in stats)
        return Tensor(dtype, tuple(get("shape") or ()), stats, get("md5"))
    if "type" in entry and "value" in entry and len(entry) <= 3:
        kind, value = str(entry["type"]), entry["value"]
        if "dtype" in kind.lower() and isinstance(value, str):  # torch.float32 / Float32 as an argument
            value = normalise_dtype(value)
        return Scalar(kind, value)
    return entry


def _node(name: str, entry: Any) -> Node | None:
    parsed = parse_node_name(name)
    if parsed is None or not isinstance(entry, dict):
        return None
    if parsed.direction == "parameters_grad":
        return Node(parsed, outputs={key: value for key, value in entry.items() if value is not None})
    parameters = entry.get("parameters") or {}
    inputs = {"args": entry.get("input_args", entry.get("input", [])), "kwargs": entry.get("input_kwargs", {})}
    return Node(parsed, inputs,
                {"out": entry.get("output", [])}, {k: v for k, v in parameters.items() if isinstance(v, Tensor)})


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
