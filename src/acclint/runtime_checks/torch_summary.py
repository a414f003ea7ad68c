"""Statistics and mix64 digests of torch tensors, computed where the tensors are.

The same numbers as `records.summarize` on a host copy (see `contenthash` for the hash), but with
torch's own vectorised kernels on the tensor's device, a few MiB of temporaries at a time, and
one device-to-host transfer for a whole list of tensors instead of one copy of every tensor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from acclint.runtime_checks.contenthash import BLOCK_WORDS, K, M1, M2, finish, position_table, to_signed
from acclint.runtime_checks.moments import EMPTY_STATS, moment_stats

# Canonical elements per piece: 8 blocks of words (4 MiB of int64 per temporary).
PIECE_WORDS = 8 * BLOCK_WORDS
_M1, _M2, _K = to_signed(M1), to_signed(M2), to_signed(K)

Stats = dict[str, float]


@dataclass
class _Pending:
    """One tensor's partial results, still on its device."""

    device: Any
    total: Any  # 0-d int64: the sum over blocks
    moments: Any  # float64 [sum, sum of squares, min, max]
    numel: int
    nbytes: int


class TorchSummaries:
    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self._tables: dict[str, Any] = {}

    # ------------------------------------------------------------------ public
    def summarize(self, tensor: Any) -> tuple[Stats, str]:
        return self.summarize_many([tensor])[0]

    def summarize_many(self, tensors: Sequence[Any]) -> list[tuple[Stats, str]]:
        """(statistics, digest) of every tensor; one transfer per device at the end."""
        pending = [self._pending(t) for t in tensors]
        by_device: dict[str, list[int]] = {}
        for index, item in enumerate(pending):
            if item.total is not None:
                by_device.setdefault(str(item.device), []).append(index)
        totals: dict[int, int] = {}
        moments: dict[int, list[float]] = {}
        for indices in by_device.values():
            torch = self.torch
            totals.update(zip(indices, torch.stack([pending[i].total for i in indices]).cpu().tolist()))
            moments.update(zip(indices, torch.stack([pending[i].moments for i in indices]).cpu().tolist()))
        return [self._finish(item, totals.get(i, 0), moments.get(i)) for i, item in enumerate(pending)]

    # ------------------------------------------------------------------ one tensor
    def _pending(self, tensor: Any) -> _Pending:
        torch = self.torch
        data = tensor.detach()
        if data.is_floating_point():
            canonical, width = torch.float32, 4
        elif data.is_complex():
            raise TypeError("complex tensors are summarised on the host")
        else:
            canonical, width = torch.int64, 8
        numel = data.numel()
        if numel == 0:
            return _Pending(data.device, None, None, 0, 0)
        flat = data.reshape(-1)  # a copy only for a non-contiguous tensor
        per_word = 8 // width
        piece = PIECE_WORDS * per_word
        total = torch.zeros((), dtype=torch.int64, device=data.device)
        parts = []
        for start in range(0, numel, piece):
            values = flat[start : start + piece].to(canonical)
            parts.append(self._moments(values))
            total = total + self._mix(self._words(values, per_word), start // per_word // BLOCK_WORDS)
        stacked = torch.stack(parts)
        moments = torch.stack([stacked[:, 0].sum(), stacked[:, 1].sum(), stacked[:, 2].min(), stacked[:, 3].max()])
        return _Pending(data.device, total, moments, numel, numel * width)

    def _moments(self, values: Any) -> Any:
        torch = self.torch
        wide = values if values.dtype == torch.float32 else values.to(torch.float64)
        low, high = torch.aminmax(wide)
        parts = [wide.sum(), wide.square().sum(), low, high]  # dot loses ~1e-6 in float32
        return torch.stack([p.to(torch.float64) for p in parts])

    def _words(self, values: Any, per_word: int) -> Any:
        torch = self.torch
        if per_word == 2 and values.numel() % 2:
            padded = torch.zeros(values.numel() + 1, dtype=values.dtype, device=values.device)
            padded[:-1] = values
            values = padded
        return values.contiguous().view(torch.int64)

    def _mix(self, words: Any, first_block: int) -> Any:
        """sum over this piece's blocks of fmix64(S_b + (b + 1) * K), a 0-d int64 on the device."""
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
        for multiplier in (_M1, _M2, None):
            x = x ^ _shift_right(torch, x, 33)
            if multiplier is not None:
                x = x * multiplier
        return x.sum()

    def _block_sums(self, words: Any, table: Any) -> Any:
        torch = self.torch
        x = torch.bitwise_xor(words, table)
        x ^= _shift_right(torch, x, 32)
        x *= _M1
        x ^= _shift_right(torch, x, 29)
        x *= _M2
        return x.sum(dim=1)

    def _table(self, device: Any) -> Any:
        key = str(device)
        if key not in self._tables:
            table = self.torch.from_numpy(position_table().view("<i8").copy())
            self._tables[key] = table.to(device)
        return self._tables[key]

    def _finish(self, item: _Pending, total: int, moments: list[float] | None) -> tuple[Stats, str]:
        digest = finish(total, item.nbytes)
        if moments is None:
            return dict(EMPTY_STATS), digest
        return moment_stats(*moments, item.numel), digest


def _shift_right(torch: Any, x: Any, bits: int) -> Any:
    """Logical right shift of int64 (torch's >> is arithmetic: mask the sign copies off)."""
    return torch.bitwise_right_shift(x, bits).bitwise_and_((1 << (64 - bits)) - 1)


_SHARED: dict[int, TorchSummaries] = {}


def summaries(torch: Any) -> TorchSummaries:
    """The process-wide instance (it caches the position table per device)."""
    if id(torch) not in _SHARED:
        _SHARED[id(torch)] = TorchSummaries(torch)
    return _SHARED[id(torch)]
