"""Where a rollback snapshot lives: host memory, or a memory-mapped file (offload="disk").

Never on the model's device: a snapshot of a model that fills its accelerator would not fit there.
The adapters copy tensor by tensor into one buffer sized up front, so the device never holds
more than the tensor being copied. "host" is anonymous memory; "disk" is a file in `directory`
(default: the system temporary folder) that the page cache backs, so a model larger than the
host's free memory can still be rolled back. The file is removed on release.
"""

from __future__ import annotations

import mmap
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from acclint.runtime_checks.model.errors import FingerprintError

OFFLOAD_CHOICES = ("host", "disk")
# Every tensor starts at a multiple of this (any dtype can be viewed there; cache-line aligned).
ALIGNMENT = 64


def check_offload(offload: str) -> None:
    if offload not in OFFLOAD_CHOICES:
        raise FingerprintError(f"offload must be one of {', '.join(map(repr, OFFLOAD_CHOICES))}, got {offload!r}")


def aligned(nbytes: int) -> int:
    return -(-nbytes // ALIGNMENT) * ALIGNMENT


class HostStore:
    """One host buffer holding a snapshot's copies, handed out in aligned pieces."""

    def __init__(self, nbytes: int, offload: str = "host", directory: "str | Path | None" = None,
                 allocate: Any = None) -> None:
        """`allocate(nbytes)`: a uint8 host array for "host" (an adapter passes page-locked memory
        for an accelerator, which copies to and from it several times faster)."""
        check_offload(offload)
        self.offload = offload
        self.path: Path | None = None
        size = max(int(nbytes), ALIGNMENT)
        if offload == "disk":
            try:
                handle, name = tempfile.mkstemp(prefix="acclint-snapshot-", suffix=".bin", dir=directory)
            except OSError as exc:
                raise FingerprintError(f"cannot create the offload file in {directory or tempfile.gettempdir()}: {exc}") from None
            os.close(handle)
            self.path = Path(name)
            try:
                self.buffer: np.ndarray = np.memmap(self.path, dtype=np.uint8, mode="w+", shape=(size,))
            except OSError as exc:
                self.release()
                raise FingerprintError(f"cannot map {size} bytes of {self.path}: {exc}") from None
        elif allocate is not None:
            self.buffer = allocate(size)
        else:
            # Private anonymous memory of our own (mmap's default, shared, would count as shmem);
            # huge pages and pre-faulting measured no better here.
            flags = getattr(mmap, "MAP_PRIVATE", None), getattr(mmap, "MAP_ANONYMOUS", None)
            memory = mmap.mmap(-1, size, flags=flags[0] | flags[1]) if None not in flags else mmap.mmap(-1, size)
            self.buffer = np.frombuffer(memory, dtype=np.uint8)
        self.used = 0

    def take(self, nbytes: int) -> np.ndarray:
        """The next `nbytes` bytes of the buffer (uint8, aligned)."""
        start = self.used
        self.used = start + aligned(nbytes)
        if self.used > self.buffer.size:
            raise FingerprintError("internal: the snapshot outgrew the size measured for it (a tensor changed shape?)")
        return self.buffer[start : start + nbytes]

    def array(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        return self.take(count * dtype.itemsize).view(dtype).reshape(shape)

    def release(self) -> None:
        """Drop the buffer (its memory goes when the last copy referring to it does) and the file."""
        self.buffer = np.empty(0, dtype=np.uint8)
        if self.path is not None:
            try:
                self.path.unlink()  # POSIX keeps a still-mapped file's pages until they are unmapped
            except OSError:
                pass
