"""Framework-neutral pieces shared by the torch and MindSpore paths.

Everything computed from a tensor's values (statistics, content hash, norms, scalar losses) is
defined here, on host numpy arrays, so both frameworks produce numbers the same way; a torch
tensor is summarised where it lives by `torch_summary`, to the same numbers (`summarize`).
"""

from __future__ import annotations

import math
import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from acclint.runtime_checks.model import contenthash
from acclint.runtime_checks.model.errors import FingerprintError
from acclint.runtime_checks.adapters.moments import EMPTY_STATS, moment_stats, shift_of
from acclint.runtime_checks.model.fingerprint import TensorRecord, ValueRecord

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
    return contenthash.canonical(array)


def summarize(array: Any) -> tuple[dict[str, float], str]:
    """Statistics and the content hash (`contenthash`) of one tensor's values.

    A host numpy array is summarised here; a torch tensor where it lives, with torch's kernels
    (`torch_summary`), to the same numbers. One tensor at a time, so a caller holding one full
    tensor (a gathered shard) needs nothing else in memory."""
    if _is_torch(array):
        if not array.is_complex():
            return summarize_many([array])[0]
        array = array.detach().cpu().numpy()
    flat = hashable(np.asarray(array))
    digest = contenthash.digest(flat)
    if flat.size == 0:
        return dict(EMPTY_STATS), digest
    shift = shift_of(float(flat[0]))
    return moment_stats(*_sums(flat, shift), shift, float(flat.min()), float(flat.max()), flat.size), digest


def tensor_records(
    tensors: Sequence[NamedTensor],
    to_host: Callable[[Any], np.ndarray],
    keep: dict[str, np.ndarray] | None = None,
    summarize_many: Callable[[list[Any]], list[tuple[dict[str, float], str]]] | None = None,
) -> list[TensorRecord]:
    """Records for the tensors. `summarize_many` (the adapter's) summarises them where they live;
    without it they are copied to the host one by one and summarised in parallel there.

    When `keep` is a dict, a private host copy of each array is stored in it under the common name.
    """

    def record(item: NamedTensor, summary: tuple[dict[str, float], str]) -> TensorRecord:
        stats, digest = summary
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

    if keep is not None:
        keep.update((item.name, np.array(to_host(item.tensor), copy=True)) for item in tensors)
    if summarize_many is not None:
        return [record(item, summary) for item, summary in zip(tensors, summarize_many([t.tensor for t in tensors]))]
    # Framework calls (to_host) stay on this thread; only the numpy work (it releases the GIL) is
    # parallel. At most 2 x workers host arrays are alive at once: a device model is not copied whole.
    workers = max(1, min(os.cpu_count() or 1, 8))
    records: list[TensorRecord] = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: deque[Future] = deque()
        for item in tensors:
            array = to_host(item.tensor)
            pending.append(pool.submit(lambda i, a: record(i, summarize(a)), item, array))
            if len(pending) >= 2 * workers:
                records.append(pending.popleft().result())
        records.extend(future.result() for future in pending)
    return records


def _sums(array: np.ndarray, shift: float = 0.0) -> tuple[float, float]:
    """The sum and the sum of squares of the values minus `shift`, accumulated in float64, chunked
    so large tensors need no full-size copy (see `moments` for why the shift)."""
    flat = np.ascontiguousarray(array).reshape(-1)
    total = squares = 0.0
    for start in range(0, flat.size, _CHUNK):
        chunk = flat[start : start + _CHUNK].astype(np.float64) - shift
        total += float(chunk.sum())
        squares += float(np.dot(chunk, chunk))
    return total, squares


def sum_of_squares(array: np.ndarray) -> float:
    """Accumulated in float64, chunked so large tensors need no full-size copy."""
    return _sums(array)[1]


def l2_norm(array: np.ndarray) -> float:
    return math.sqrt(sum_of_squares(array))


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
    from acclint.runtime_checks.model.errors import NonFiniteLossError

    if value is not None and not math.isfinite(value):
        kind = "NaN" if math.isnan(value) else "infinite"
        hint = hint or "there is nothing to compare until it is finite"
        raise NonFiniteLossError(f"the {what} is {kind}; {hint}", fingerprint)


# Samples per tensor up to which the batch records one short hash per sample (which sample differs).
SAMPLE_HASHES_UP_TO = 4096
SAMPLE_HASH_CHARS = 12


def value_record(path: str, array: Any, dtype: str, per_sample: bool = False, spaced: int = 0) -> ValueRecord:
    """The record of one batch or activation tensor (a host array or a torch tensor), hashed by value.

    `per_sample`: one short hash per sample along the first dimension (says which sample differs).
    `spaced`: also keep that many values at evenly spaced positions of the flattened tensor."""
    stats, digest = summarize(array)
    shape = [int(n) for n in array.shape]
    numel = int(np.prod(shape, dtype=np.int64))
    samples = None
    if per_sample and len(shape) >= 1 and 0 < shape[0] <= SAMPLE_HASHES_UP_TO:
        samples = [row_digest[:SAMPLE_HASH_CHARS] for _, row_digest in summarize_many(list(array))]
    sample = None
    if spaced and numel:
        positions = np.linspace(0, numel - 1, min(spaced, numel)).astype(np.int64)
        sample = [float(v) for v in array.reshape(-1)[positions].tolist()]
    return ValueRecord(path=path, shape=shape, dtype=dtype, stats=stats, sha256=digest, samples=samples, sample=sample)


def summarize_many(arrays: list[Any]) -> list[tuple[dict[str, float], str]]:
    """`summarize` of each; torch tensors with one device-to-host transfer for all of them."""
    if arrays and all(_is_torch(a) and not a.is_complex() for a in arrays):
        from acclint.runtime_checks.adapters.torch_summary import summaries

        import torch

        return summaries(torch).summarize_many(arrays)
    return [summarize(a) for a in arrays]


def _is_torch(value: Any) -> bool:
    return not isinstance(value, np.ndarray) and type(value).__module__.partition(".")[0] == "torch"


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
