"""The content hash of a tensor's values ("mix64"), its specification and its numpy implementation.

The hash only has to tell two runs' tensors apart when their values differ: both sides are our
own captures, nobody crafts collisions, so a cryptographic hash buys nothing and costs a serial
pass over every byte on the host (sha256 ran at about 1 GB/s here and needed each tensor copied off
the accelerator first). mix64 is a sum of independently mixed 64-bit words, which the framework's
own vectorised integer kernels compute on the device in any order and in any chunking:

    canonical bytes  floats as little-endian float32, integers and bools as little-endian int64
                     (as before: a bfloat16 tensor hashes as its exact float32 values, so equal
                     values hash equal whatever the dtype, layout, strides or device);
                     zero-padded to a multiple of 8 bytes, read as little-endian uint64 words
    word j of block b (blocks of BLOCK_WORDS words), in int64 arithmetic (wrapping; >> is the
    arithmetic shift, as torch's on int64, so no masking pass is needed):
        x = w ^ T[j];  x ^= x >> 32;  x *= M1;  x ^= x >> 29;  x *= M2
    block sum        S_b = sum of its x (mod 2**64)
    digest           H = sum over blocks of fmix64(S_b + (b + 1) * K) (mod 2**64, logical shifts);
                     fmix64(H ^ fmix64(byte length + 1)) as 16 hex digits

Eight elementwise passes per 8 bytes. The multiplies (odd constants, bijective) carry low bits
up and the xor-shifts bring high bits down, so a change anywhere in a word (a float's sign or
exponent included) moves the mixed value in its low bits too: a sum that only a difference in
the top bits reached could cancel (two flipped signs would), this one cannot. Each xor-shift by
an arithmetic shift is two-to-one (a word has at most 3 partners at its position that mix to the
same value), and the position enters through T (the splitmix64 sequence) and the block index.
Two unequal tensors then collide only when their sums of mixed 64-bit values cancel exactly:
about 2**-62 per comparison for data nobody chose to collide, far below any chance of a false
"identical" verdict. An equal hash means "equal" only for tensors nobody crafted to collide,
which is all a parity check between two runs compares.
"""

from __future__ import annotations

import functools

import numpy as np

ALGORITHM = "mix64"
# The hash of format versions 1 and 2: sha256 of the same canonical bytes.
LEGACY_ALGORITHM = "sha256-f32"

BLOCK_WORDS = 1 << 16
M1 = 0xFF51AFD7ED558CCD
M2 = 0xC4CEB9FE1A85EC53
K = 0x9E3779B97F4A7C15
_MASK = (1 << 64) - 1


def to_signed(value: int) -> int:
    """A uint64 constant as the int64 with the same bits (torch has no uint64 arithmetic everywhere)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def fmix64(value: int) -> int:
    """MurmurHash3's 64-bit finaliser on a Python int (used once per digest)."""
    value &= _MASK
    value ^= value >> 33
    value = (value * M1) & _MASK
    value ^= value >> 33
    value = (value * M2) & _MASK
    return value ^ (value >> 33)


def finish(block_total: int, nbytes: int) -> str:
    """The digest from the sum over blocks and the canonical byte length."""
    return f"{fmix64((block_total & _MASK) ^ fmix64(nbytes + 1)):016x}"


@functools.lru_cache(maxsize=1)
def position_table() -> np.ndarray:
    """T: splitmix64 of 1..BLOCK_WORDS, as uint64 (cached; 512 KiB)."""
    with np.errstate(over="ignore"):
        z = (np.arange(1, BLOCK_WORDS + 1, dtype=np.uint64) * np.uint64(K)).astype(np.uint64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def canonical(array: np.ndarray) -> np.ndarray:
    """The values in the one layout that is hashed (see the module docstring), flat and contiguous."""
    flat = np.ascontiguousarray(array).reshape(-1)
    if flat.dtype.kind == "f":
        return flat.astype("<f4", copy=False)
    if flat.dtype.kind in "iub":
        return flat.astype("<i8", copy=False)
    return flat


def words(flat: np.ndarray) -> np.ndarray:
    """Canonical bytes as little-endian uint64 words, zero-padded."""
    raw = memoryview(np.ascontiguousarray(flat)).cast("B")
    if len(raw) % 8:
        padded = np.zeros(len(raw) // 8 + 1, dtype="<u8")
        padded.view(np.uint8)[: len(raw)] = np.frombuffer(raw, dtype=np.uint8)
        return padded
    return np.frombuffer(raw, dtype="<u8")


def mix_blocks_numpy(block_words: np.ndarray) -> np.ndarray:
    """Block sums S_b (uint64) of a (blocks, n <= BLOCK_WORDS) array of words."""
    table = position_table()[: block_words.shape[1]].view(np.int64)
    with np.errstate(over="ignore"):
        x = block_words.view(np.int64) ^ table
        x ^= x >> 32  # arithmetic on int64, as in torch
        x *= np.int64(to_signed(M1))
        x ^= x >> 29
        x *= np.int64(to_signed(M2))
        return x.sum(axis=1, dtype=np.int64).view(np.uint64)


def combine_numpy(block_sums: np.ndarray, first_block: int = 0) -> int:
    """sum over b of fmix64(S_b + (b + 1) * K), as a Python int (mod 2**64)."""
    index = np.arange(first_block + 1, first_block + 1 + block_sums.size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = block_sums.astype(np.uint64) + index * np.uint64(K)
        x ^= x >> np.uint64(33)
        x *= np.uint64(M1)
        x ^= x >> np.uint64(33)
        x *= np.uint64(M2)
        x ^= x >> np.uint64(33)
        return int(x.sum(dtype=np.uint64))


def digest(array: np.ndarray) -> str:
    """mix64 of the array's values (canonical layout; see the module docstring)."""
    flat = canonical(array)
    data = words(flat)
    full = data.size // BLOCK_WORDS * BLOCK_WORDS
    total = 0
    # A few blocks at a time: the temporaries stay a few MiB whatever the tensor's size.
    step = 16 * BLOCK_WORDS
    for start in range(0, full, step):
        chunk = data[start : min(full, start + step)].reshape(-1, BLOCK_WORDS)
        total += combine_numpy(mix_blocks_numpy(chunk), start // BLOCK_WORDS)
    if full < data.size:
        total += combine_numpy(mix_blocks_numpy(data[full:].reshape(1, -1)), full // BLOCK_WORDS)
    return finish(total, flat.nbytes)
