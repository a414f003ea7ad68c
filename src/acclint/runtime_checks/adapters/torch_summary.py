"""Statistics and mix64 digests of torch tensors, computed where the tensors are.

The same numbers as `records.summarize` on a host copy (see `contenthash` for the hash), but with
torch's own vectorised kernels on the tensor's device, a few MiB of temporaries at a time, and
one device-to-host transfer for a whole list of tensors instead of one copy of every tensor.

Work is cut into pieces of PIECE_WORDS words. On the CPU torch's own intra-op parallelism is
switched off meanwhile and the pieces go to a pool of threads: a piece (or a small activation) is
too small for every op to pay a parallel region (on a loaded machine each costs a wait for a
descheduled thread, which made hashing 8x slower), while independent pieces keep every core busy.
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from acclint.runtime_checks.model.contenthash import BLOCK_WORDS, K, M1, M2, finish, position_table, to_signed
from acclint.runtime_checks.adapters.moments import EMPTY_STATS, moment_stats

# Words per piece: 8 blocks (4 MiB of int64 per temporary, cache-sized).
PIECE_WORDS = 8 * BLOCK_WORDS
# Below this many elements in all, CPU work stays on the calling thread (an activation, a batch).
POOL_FROM_ELEMENTS = 1 << 22
_M1, _M2, _K = to_signed(M1), to_signed(M2), to_signed(K)

Stats = dict[str, float]


@dataclass
class _Plan:
    """One tensor, flattened, and how it is canonicalised (see `contenthash`)."""

    flat: Any
    canonical: Any  # torch.float32 or torch.int64
    per_word: int  # canonical elements per 8-byte word
    numel: int

    @property
    def piece(self) -> int:
        return PIECE_WORDS * self.per_word

    @property
    def nbytes(self) -> int:
        return self.numel * 8 // self.per_word


class TorchSummaries:
    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self._tables: dict[str, Any] = {}
        self._local = threading.local()

    # ------------------------------------------------------------------ public
    def summarize(self, tensor: Any) -> tuple[Stats, str]:
        return self.summarize_many([tensor])[0]

    def summarize_many(self, tensors: Sequence[Any]) -> list[tuple[Stats, str]]:
        """(statistics, digest) of every tensor; one transfer per device at the end."""
        plans = [self._plan(t) for t in tensors]
        tasks = [(i, start) for i, plan in enumerate(plans) if plan.numel for start in range(0, plan.numel, plan.piece)]
        results = self._run(plans, tasks)
        pieces: dict[int, list[tuple[Any, Any]]] = {}
        for (index, _), result in zip(tasks, results):
            pieces.setdefault(index, []).append(result)
        by_device: dict[str, list[int]] = {}
        for index in pieces:
            by_device.setdefault(str(plans[index].flat.device), []).append(index)
        totals: dict[int, int] = {}
        moments: dict[int, list[float]] = {}
        torch = self.torch
        for indices in by_device.values():
            combined = [self._combine(pieces[i]) for i in indices]
            totals.update(zip(indices, torch.stack([c[0] for c in combined]).cpu().tolist()))
            moments.update(zip(indices, torch.stack([c[1] for c in combined]).cpu().tolist()))
        return [self._finish(plan, totals.get(i, 0), moments.get(i)) for i, plan in enumerate(plans)]

    # ------------------------------------------------------------------ pieces
    def _plan(self, tensor: Any) -> _Plan:
        torch = self.torch
        data = tensor.detach()
        if data.is_complex():
            raise TypeError("complex tensors are summarised on the host")
        canonical, per_word = (torch.float32, 2) if data.is_floating_point() else (torch.int64, 1)
        return _Plan(data.reshape(-1), canonical, per_word, data.numel())  # a copy only if not contiguous

    def _run(self, plans: list[_Plan], tasks: list[tuple[int, int]]) -> list[tuple[Any, Any]]:
        on_cpu = all(plans[i].flat.device.type == "cpu" for i, _ in tasks)
        elements = sum(plan.numel for plan in plans)
        return run_pieces(self.torch, tasks, lambda task: self._piece(plans[task[0]], task[1]), on_cpu, elements)

    def _piece(self, plan: _Plan, start: int) -> tuple[Any, Any]:
        """(sum over the piece's blocks of fmix64(S_b + (b + 1) * K),
        [sum and sum of squares of the values minus the tensor's first value, min, max, that value])."""
        values = plan.flat[start : start + plan.piece].to(plan.canonical)
        return (self._mix(self._words(values, plan.per_word), start // plan.per_word // BLOCK_WORDS),
                self._moments(values, self._shift(plan)))

    def _shift(self, plan: _Plan) -> Any:
        # The same for every piece, and kept on the device: no synchronisation per piece.
        # A non-finite first value would make every shifted value NaN: no shift then (`shift_of`).
        first = plan.flat[0].to(plan.canonical).to(self.torch.float64)
        return self.torch.where(self.torch.isfinite(first), first, self.torch.zeros_like(first))

    def _moments(self, values: Any, shift: Any) -> Any:
        torch = self.torch
        low, high = torch.aminmax(values)
        # Shifted, in float64: float32 sums of squares lost the std of a large-mean output (see `moments`).
        shifted = values.to(torch.float64).sub_(shift)
        parts = [shifted.sum(), torch.dot(shifted, shifted), low.to(torch.float64), high.to(torch.float64), shift]
        return torch.stack(parts)

    def _words(self, values: Any, per_word: int) -> Any:
        torch = self.torch
        if per_word == 2 and values.numel() % 2:
            padded = torch.zeros(values.numel() + 1, dtype=values.dtype, device=values.device)
            padded[:-1] = values
            values = padded
        return values.contiguous().view(torch.int64)

    def _mix(self, words: Any, first_block: int) -> Any:
        torch = self.torch
        count = words.numel()
        full = count // BLOCK_WORDS * BLOCK_WORDS
        table = self._table(words.device)
        sums = []
        if full:
            sums.append(self._block_sums(words[:full].view(-1, BLOCK_WORDS), table))
        if full < count:
            sums.append(self._block_sums(words[full:].view(1, -1), table[: count - full]))
        block_sums = torch.cat(sums) if len(sums) > 1 else sums[0]
        index = torch.arange(first_block + 1, first_block + 1 + block_sums.numel(), dtype=torch.int64,
                             device=words.device)
        x = block_sums + index * _K
        for multiplier in (_M1, _M2, None):  # fmix64, with logical shifts
            x = x ^ torch.bitwise_right_shift(x, 33).bitwise_and_((1 << 31) - 1)
            if multiplier is not None:
                x = x * multiplier
        return x.sum()

    def _block_sums(self, words: Any, table: Any) -> Any:
        torch = self.torch
        # Into this thread's scratch buffers: a fresh 4 MiB temporary per op cost as much as the op.
        x, shifted = (buffer[: words.numel()].view(words.shape) for buffer in self.scratch(words.device))
        torch.bitwise_xor(words, table, out=x)
        x ^= torch.bitwise_right_shift(x, 32, out=shifted)  # arithmetic shifts, as the spec says
        x *= _M1
        x ^= torch.bitwise_right_shift(x, 29, out=shifted)
        x *= _M2
        return x.sum(dim=1)

    def scratch(self, device: Any) -> tuple[Any, Any]:
        """Two int64 buffers of PIECE_WORDS on `device`, this thread's own (kept for its lifetime)."""
        buffers = getattr(self._local, "buffers", None)
        if buffers is None:
            buffers = self._local.buffers = {}
        key = str(device)
        if key not in buffers:
            buffers[key] = tuple(self.torch.empty(PIECE_WORDS, dtype=self.torch.int64, device=device) for _ in range(2))
        return buffers[key]

    def _table(self, device: Any) -> Any:
        key = str(device)
        if key not in self._tables:
            table = self.torch.from_numpy(position_table().view("<i8").copy())
            self._tables[key] = table.to(device)
        return self._tables[key]

    # ------------------------------------------------------------------ results
    def _combine(self, pieces: list[tuple[Any, Any]]) -> tuple[Any, Any]:
        torch = self.torch
        totals = torch.stack([total for total, _ in pieces])
        moments = torch.stack([m for _, m in pieces])
        combined = torch.stack([moments[:, 0].sum(), moments[:, 1].sum(), moments[:, 2].min(), moments[:, 3].max(),
                                moments[0, 4]])
        return totals.sum(), combined

    def _finish(self, plan: _Plan, total: int, moments: list[float] | None) -> tuple[Stats, str]:
        digest = finish(total, plan.nbytes)
        if moments is None:
            return dict(EMPTY_STATS), digest
        shifted_total, shifted_sum_sq, low, high, shift = moments
        return moment_stats(shifted_total, shifted_sum_sq, shift, low, high, plan.numel), digest


def run_pieces(torch: Any, tasks: list[Any], work: Callable[[Any], Any], on_cpu: bool, elements: int) -> list[Any]:
    """work(task) for every task, in order. On the CPU with torch's intra-op parallelism off meanwhile,
    and for enough elements on a pool of threads, one per torch thread (see the module docstring)."""
    if not on_cpu:
        return [work(task) for task in tasks]
    threads = torch.get_num_threads()
    with _intra_op_threads(torch, 1):
        if threads == 1 or len(tasks) == 1 or elements < POOL_FROM_ELEMENTS:
            return [work(task) for task in tasks]
        with ThreadPoolExecutor(max_workers=threads) as pool:
            return list(pool.map(work, tasks))


@contextlib.contextmanager
def _intra_op_threads(torch: Any, count: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


_SHARED: dict[int, TorchSummaries] = {}


def summaries(torch: Any) -> TorchSummaries:
    """The process-wide instance (it caches the position table per device)."""
    if id(torch) not in _SHARED:
        _SHARED[id(torch)] = TorchSummaries(torch)
    return _SHARED[id(torch)]
