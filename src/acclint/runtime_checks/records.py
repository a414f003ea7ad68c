"""Framework-neutral pieces shared by the torch and MindSpore paths.

The framework adapters turn their tensors into host numpy arrays; everything that can be
computed from those arrays (statistics, content hash, norms, scalar losses) lives here so
both frameworks produce numbers the same way.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from acclint.runtime_checks.errors import FingerprintError
from acclint.runtime_checks.fingerprint import TensorRecord, ValueRecord

# Elements per chunk when accumulating in float64: bounds the temporary copy for large tensors.
_CHUNK = 1 << 22


@dataclass
class NamedTensor:
    """A framework tensor with its names; `tensor` is the live framework object."""

    native_name: str
    name: str  # common name (built-in mapping applied)
    module: str  # owning module/cell class name
    tensor: Any
    trainable: bool
    shape: tuple[int, ...]
    dtype: str


def hashable(array: np.ndarray) -> np.ndarray:
    """The values in the one layout that is hashed: floats as little-endian float32, integers and
    bools as little-endian int64, so torch int64 labels and MindSpore int32 labels hash equal."""
    flat = np.ascontiguousarray(array).reshape(-1)
    if flat.dtype.kind == "f":
        return flat.astype("<f4", copy=False)
    if flat.dtype.kind in "iub":
        return flat.astype("<i8", copy=False)
    return flat


def summarize(array: np.ndarray) -> tuple[dict[str, float], str]:
    """Statistics and the content hash of one tensor's values (see `hashable`)."""
    flat = hashable(array)
    digest = hashlib.sha256(memoryview(flat).cast("B")).hexdigest()
    if flat.size == 0:
        return {"mean": 0.0, "std": 0.0, "min": 0.0, "max": 0.0, "norm": 0.0}, digest
    values = flat if flat.dtype.kind == "f" else flat.astype(np.float64)
    mean = float(values.mean())
    sum_sq = float(np.dot(values, values))
    variance = max(sum_sq / values.size - mean * mean, 0.0)
    stats = {
        "mean": mean,
        "std": math.sqrt(variance),
        "min": float(values.min()),
        "max": float(values.max()),
        "norm": math.sqrt(sum_sq),
    }
    return stats, digest


def tensor_records(
    tensors: Sequence[NamedTensor], to_host: Callable[[Any], np.ndarray], keep: dict[str, np.ndarray] | None = None
) -> list[TensorRecord]:
    """Records for the tensors, hashed in parallel (hashlib and numpy release the GIL).

    When `keep` is a dict, a private copy of each array is stored in it under the common name.
    """

    def record(item: NamedTensor, array: np.ndarray) -> TensorRecord:
        stats, digest = summarize(array)
        return TensorRecord(
            name=item.name,
            native_name=item.native_name,
            module=item.module,
            shape=list(item.shape),
            dtype=item.dtype,
            trainable=item.trainable,
            numel=int(np.prod(item.shape, dtype=np.int64)),
            stats=stats,
            sha256=digest,
        )

    # Framework calls (to_host) stay on this thread; only the numpy/hashlib work is parallel.
    # At most 2 x workers host arrays are alive at once, so a device model is not copied whole.
    workers = max(1, min(os.cpu_count() or 1, 8))
    records: list[TensorRecord] = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: deque[Future] = deque()
        for item in tensors:
            array = to_host(item.tensor)
            if keep is not None:
                keep[item.name] = np.array(array, copy=True)
            pending.append(pool.submit(record, item, array))
            if len(pending) >= 2 * workers:
                records.append(pending.popleft().result())
        records.extend(future.result() for future in pending)
    return records


def l2_norm(array: np.ndarray) -> float:
    """L2 norm accumulated in float64, chunked so large tensors need no full-size copy."""
    flat = np.ascontiguousarray(array).reshape(-1)
    total = 0.0
    for start in range(0, flat.size, _CHUNK):
        chunk = flat[start : start + _CHUNK].astype(np.float64)
        total += float(np.dot(chunk, chunk))
    return math.sqrt(total)


def global_norm(norms: Iterable[float | None]) -> float:
    return math.sqrt(sum(n * n for n in norms if n is not None))


def loss_value(loss: Any, where: str = "loss_fn") -> float:
    """A Python float from a scalar loss (0-d or single-element tensor, numpy scalar or number)."""
    if isinstance(loss, bool):
        raise FingerprintError(f"{where} returned a bool, not a loss")
    if isinstance(loss, (int, float, np.floating, np.integer)):
        return float(loss)
    shape = getattr(loss, "shape", None)
    if shape is None or not hasattr(loss, "item"):
        raise FingerprintError(f"{where} must return a scalar loss tensor, got {type(loss).__name__}")
    if int(np.prod(tuple(shape), dtype=np.int64)) != 1:
        raise FingerprintError(
            f"{where} must return a scalar loss, got a tensor of shape {list(shape)}; "
            "reduce it first (e.g. .mean() or .sum())"
        )
    return float(loss.item())


def require_finite(value: float | None, what: str, hint: str = "", fingerprint: Any = None) -> None:
    """Raise NonFiniteLossError for NaN/inf; `what` names the loss (e.g. 'step-0 loss')."""
    from acclint.runtime_checks.errors import NonFiniteLossError

    if value is not None and not math.isfinite(value):
        kind = "NaN" if math.isnan(value) else "infinite"
        hint = hint or "there is nothing to compare until it is finite"
        raise NonFiniteLossError(f"the {what} is {kind}; {hint}", fingerprint)


# Samples per tensor up to which the batch records one short hash per sample (which sample differs).
SAMPLE_HASHES_UP_TO = 4096
SAMPLE_HASH_CHARS = 12


def value_record(path: str, array: np.ndarray, dtype: str, per_sample: bool = False, spaced: int = 0) -> ValueRecord:
    """The record of one batch or activation tensor, hashed by value (see `hashable`).

    `per_sample`: one short hash per sample along the first dimension (says which sample differs).
    `spaced`: also keep that many values at evenly spaced positions of the flattened tensor."""
    stats, digest = summarize(array)
    samples = None
    if per_sample and array.ndim >= 1 and 0 < array.shape[0] <= SAMPLE_HASHES_UP_TO:
        samples = [hashlib.sha256(memoryview(hashable(row)).cast("B")).hexdigest()[:SAMPLE_HASH_CHARS] for row in array]
    sample = None
    if spaced and array.size:
        flat = array.reshape(-1)
        sample = [float(v) for v in flat[np.linspace(0, flat.size - 1, min(spaced, flat.size)).astype(np.int64)]]
    return ValueRecord(path=path, shape=[int(n) for n in array.shape], dtype=dtype, stats=stats, sha256=digest,
                       samples=samples, sample=sample)


def named_tensors(obj: Any, is_tensor: Callable[[Any], bool], path: str = "", _depth: int = 0) -> Iterable[tuple[str, Any]]:
    """(path, tensor) for the tensors inside tuples, lists, dicts and simple objects: "0", "1.labels"."""
    if _depth > 6:
        return
    if is_tensor(obj):
        yield path, obj
        return
    if isinstance(obj, dict):
        items: Iterable[tuple[Any, Any]] = obj.items()
    elif isinstance(obj, (list, tuple)):
        items = enumerate(obj)
    elif hasattr(obj, "__dict__") and not callable(obj):
        items = vars(obj).items()
    else:
        return
    for key, value in items:
        yield from named_tensors(value, is_tensor, f"{path}.{key}" if path else str(key), _depth + 1)


def walk_tensors(obj: Any, is_tensor: Callable[[Any], bool]) -> Iterable[Any]:
    """Tensors inside a batch made of tuples, lists, dicts and simple objects."""
    return (tensor for _, tensor in named_tensors(obj, is_tensor))
