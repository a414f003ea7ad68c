"""capture and Probe under torch.distributed: the exchanges that turn per-rank parts into one fingerprint.

Every rank runs capture (or builds the Probe) with its own shard of the model. Two exchanges
run on a gloo group of acclint's own, with a timeout, so a rank that failed or hangs turns
into an error on every rank instead of a hang:

1. before the step: every rank says where its tensors sit (`sharding`); the blocks of each
   logical tensor are sent to rank 0 one tensor at a time, assembled there in the canonical
   layout and summarised, so the hash equals a single process's hash of the same tensor and
   no rank ever holds more than one full tensor besides its own shard;
2. after the step: every rank sends its own fingerprint (losses, norms, optimizer groups,
   module settings, activations) or the error it failed with; `logical.merge` builds the one
   fingerprint, identical on every rank (rank 0 writes it).

A rank that fails inside the step also leaves its error in the job's key-value store, so
ranks that stop waiting for it (a collective of the model's own breaks off) name the cause.
"""

from __future__ import annotations

import contextlib
import itertools
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Iterator

import numpy as np

from acclint.runtime_checks.model.errors import FingerprintError
from acclint.runtime_checks.model.fingerprint import Fingerprint, TensorRecord
from acclint.runtime_checks.distributed.logical import Block, Logical, RankPart, assemble, merge, plan
from acclint.runtime_checks.model.ranks import torch_distributed
from acclint.runtime_checks.adapters.records import NamedTensor, named_tensors, tensor_records, value_record
from acclint.runtime_checks.model.sharding import local_tensor, piece_of, shared_across_stages, tensor_parallel_of

# Seconds a rank waits for the others at acclint's own exchanges.
DEFAULT_TIMEOUT = 300.0
_STORE_PREFIX = "acclint/runtime"
_runs = itertools.count()  # every rank captures in the same order, so the n-th run has one id everywhere
_groups: dict[tuple[int, float], Any] = {}


class ShardedRun:
    """One distributed capture or probe on this rank."""

    def __init__(self, adapter: Any, dist: Any, tensor_parallel_group: Any, timeout: float) -> None:
        self.adapter = adapter
        self.dist = dist
        self.rank, self.world_size = dist.get_rank(), dist.get_world_size()
        self.timeout = float(timeout)
        try:
            self.group = _gloo_group(dist, self.timeout)
        except RuntimeError as error:  # making a group is collective: a rank that never comes times it out
            raise FingerprintError(
                f"rank {self.rank} could not reach the other ranks within {self.timeout:g} s: capture and Probe are "
                f"collective, every rank of the job must call them ({_first_line(error)})"
            ) from None
        self.tensor_parallel = tensor_parallel_of(tensor_parallel_group)
        self.id = next(_runs)
        self.logical: list[Logical] = []
        self.records: dict[tuple[str, str], TensorRecord] = {}
        self.batch: Any = None  # this rank's step-0 batch, when recorded (data-parallel ranks' are joined)

    @classmethod
    def start(cls, adapter: Any, tensor_parallel_group: Any = None, timeout: float = DEFAULT_TIMEOUT) -> "ShardedRun | None":
        """A run when `adapter` is torch under an initialised process group of several ranks, else None."""
        if adapter.framework != "torch":
            return None
        dist = torch_distributed()
        if dist is None or dist.get_world_size() < 2:
            return None
        if not timeout > 0:
            raise FingerprintError(f"timeout must be a positive number of seconds, got {timeout!r}")
        return cls(adapter, dist, tensor_parallel_group, timeout)

    # ------------------------------------------------------------------ exchange 1: the tensors
    def tensor_records(self, params: list[NamedTensor], state: list[NamedTensor]) -> None:
        """Plan the logical tensors from every rank's blocks and summarise each full tensor on rank 0."""
        local = {"params": params, "state": state}
        with self.guard("describing the model"):  # a layout this rank cannot read fails every rank
            blocks = {kind: [self._block(item) for item in items] for kind, items in local.items()}
        gathered = self._exchange(blocks, "describing the model")
        parts = [RankPart(rank, blocks["params"], blocks["state"], fingerprint=None) for rank, blocks in enumerate(gathered)]
        self.logical = plan(parts)  # the same inputs on every rank: an error is raised on every rank alike
        tensors = {(kind, item.name): item.tensor for kind, items in local.items() for item in items}
        records: dict[tuple[str, str], TensorRecord] = {}
        for entry in self.logical:
            full = self._gather(entry, tensors)
            if full is not None:
                item = NamedTensor(entry.block.native_name, entry.name, entry.block.module, full,
                                   entry.block.trainable, entry.global_shape, entry.block.dtype)
                records[(entry.kind, entry.name)] = tensor_records([item], self.adapter.to_host)[0]
        self.records = self._from_rank_0(records, "sharing the records")

    def _block(self, item: NamedTensor) -> Block:
        return Block(item.name, item.native_name, item.module, item.trainable, item.dtype,
                     piece_of(item.native_name, item.tensor, self.tensor_parallel), shared_across_stages(item.tensor))

    def _gather(self, entry: Logical, tensors: dict[tuple[str, str], Any]) -> Any:
        """The full tensor on rank 0 (None elsewhere), block by block from the ranks holding them."""
        sources = [(rank, block.piece.shape, block.dtype) for rank, block in entry.sources]
        arrays = self._collect(sources, tensors.get((entry.kind, entry.name)), entry.name)
        if arrays is None:
            return None
        pieces = [block.piece for _, block in entry.sources]
        return self.adapter.torch.from_numpy(assemble(entry.global_shape, zip(pieces, arrays)))

    def _collect(self, sources: list[tuple[int, Any, str]], local: Any, name: str) -> list[np.ndarray] | None:
        """On rank 0, the host copy of each (rank, shape, dtype name) source's tensor, in order; None
        elsewhere. `local` is this rank's tensor. Floats travel as float32 (what is hashed; every
        16-bit float is exact in it), everything else as int64."""
        torch = self.adapter.torch
        arrays = []
        for source, shape, dtype in sources:
            if source == self.rank:
                data = local_tensor(local).detach()
                data = (data.float() if data.is_floating_point() else data.long()).cpu().contiguous()
                if self.rank != 0:
                    self._collective(lambda: self.dist.send(data, dst=0, group=self.group), f"sending {name}")
                    continue
            elif self.rank == 0:
                floating = dtype.startswith(("float", "bfloat"))
                data = torch.empty(tuple(shape), dtype=torch.float32 if floating else torch.int64)
                self._collective(lambda: self.dist.recv(data, src=source, group=self.group), f"receiving {name}")
            else:
                continue
            arrays.append(data.numpy())
        return arrays if self.rank == 0 else None

    # ------------------------------------------------------------------ exchange 2: the fingerprint
    @contextlib.contextmanager
    def guard(self, what: str) -> Iterator[None]:
        """Around this rank's own work: a failure is published and brought to the next exchange, so
        the other ranks name it without waiting for the timeout. An error of acclint's own (bad
        input this rank found) is this rank's; any other error after another rank failed (a
        collective of the model breaking off) is reported as a consequence of that rank's."""
        try:
            yield
        except Exception as error:
            cause = None if isinstance(error, FingerprintError) else self._failures()
            message = f"{type(error).__name__}: {_first_line(error)}"
            if cause is None:
                self._publish(message)
            # The others reach an exchange next (unless a collective of the model holds them).
            with contextlib.suppress(FingerprintError):
                self._exchange(_Failed(self.rank, message), "reporting the failure")
            if cause is not None:
                raise FingerprintError(f"{cause}; rank {self.rank} stopped during {what} because of it "
                                       f"({_first_line(error)})") from error
            if isinstance(error, FingerprintError):
                raise
            raise FingerprintError(f"{what} failed on rank {self.rank}: {message}") from error

    def finish(self, local: Fingerprint) -> Fingerprint:
        """The one logical fingerprint from every rank's local one (collective)."""
        gathered = self._exchange(local, "collecting the step")
        parts = [RankPart(rank, [], [], fp) for rank, fp in enumerate(gathered)]
        merged = merge(parts, self.logical, lambda entry: self.records[(entry.kind, entry.name)], self.rank)
        if merged.batch is None and self.batch is not None:
            merged.batch = self._data_parallel_batch([fp.batch for fp in gathered])
        return merged

    def _data_parallel_batch(self, batches: list[Any]) -> Any:
        """The global batch of data-parallel ranks: each distinct rank batch once, concatenated
        along the first dimension in rank order (the samples a single process would take)."""
        if any(b is None for b in batches):
            return None
        layouts = {tuple((v.path, tuple(v.shape[1:]), v.dtype) for v in b) for b in batches}
        if len(layouts) != 1 or any(not v.shape for v in batches[0]):
            return None  # not one batch split over the ranks
        replicas: dict[tuple[str, ...], int] = {}
        for rank, batch in enumerate(batches):
            replicas.setdefault(tuple(v.sha256 for v in batch), rank)
        sources = sorted(replicas.values())
        mine = dict(named_tensors(self.batch, self.adapter.is_tensor))
        records = []
        for index, value in enumerate(batches[0]):
            parts = [(rank, batches[rank][index].shape, value.dtype) for rank in sources]
            arrays = self._collect(parts, mine.get(value.path), f"batch tensor {value.path or '<batch>'}")
            if arrays is not None:
                records.append(value_record(value.path, np.concatenate(arrays), value.dtype, per_sample=True))
        return self._from_rank_0(records, "sharing the batch")

    # ------------------------------------------------------------------ communication
    def _exchange(self, payload: Any, what: str) -> list[Any]:
        """Every rank's payload, in rank order; a rank that is missing or failed is an error on every rank."""
        def run() -> list[Any]:
            self.dist.monitored_barrier(group=self.group, timeout=timedelta(seconds=self.timeout), wait_all_ranks=True)
            gathered: list[Any] = [None] * self.world_size
            self.dist.all_gather_object(gathered, payload, group=self.group)
            return gathered

        gathered = self._collective(run, what)
        failed = [item for item in gathered if isinstance(item, _Failed)]
        if failed and not isinstance(payload, _Failed):
            causes = "; ".join(f"rank {item.rank} failed: {item.message}" for item in failed)
            raise FingerprintError(f"{causes}; rank {self.rank} stopped {what} because of it")
        return gathered

    def _from_rank_0(self, value: Any, what: str) -> Any:
        """Rank 0's `value` on every rank."""
        box = [value]
        self._collective(lambda: self.dist.broadcast_object_list(box, src=0, group=self.group), what)
        return box[0]

    def _collective(self, run: Any, what: str) -> Any:
        try:
            return run()
        except RuntimeError as error:
            cause = self._failures()
            if cause:
                raise FingerprintError(f"{cause}; rank {self.rank} stopped waiting for it ({what})") from None
            raise FingerprintError(
                f"rank {self.rank} gave up {what} after waiting {self.timeout:g} s for the other ranks: a rank failed "
                f"or hangs (see its log), or not every rank called capture / Probe ({_first_line(error)})"
            ) from None

    def _store(self) -> Any:
        try:
            return self.dist.distributed_c10d._get_default_store()
        except Exception:  # no store to leave a message in: the timeout still ends the wait
            return None

    def _publish(self, message: str) -> None:
        store = self._store()
        if store is not None:
            with contextlib.suppress(Exception):
                store.set(f"{_STORE_PREFIX}/{self.id}/failed/{self.rank}", message)

    def _failures(self) -> str | None:
        store = self._store()
        if store is None:
            return None
        found = []
        for rank in range(self.world_size):
            key = f"{_STORE_PREFIX}/{self.id}/failed/{rank}"
            with contextlib.suppress(Exception):
                if rank != self.rank and store.check([key]):
                    found.append(f"rank {rank} failed: {store.get(key).decode('utf-8', 'replace')}")
        return "; ".join(found) or None


@dataclass
class _Failed:
    """What a failed rank sends to an exchange instead of its payload."""

    rank: int
    message: str


def _gloo_group(dist: Any, timeout: float) -> Any:
    """acclint's own gloo group over all ranks (host tensors, its own timeout), made once per timeout."""
    key = (id(dist.group.WORLD), timeout)
    if key not in _groups:
        _groups[key] = dist.new_group(backend="gloo", timeout=timedelta(seconds=timeout))
    return _groups[key]


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
