"""The content hash (mix64): one digest for equal values whatever computes it, and a different one
for every kind of change a parity check meets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from acclint.runtime_checks.model import contenthash
from acclint.runtime_checks.model.contenthash import BLOCK_WORDS, digest
from acclint.runtime_checks.adapters.records import summarize, summarize_many
from acclint.runtime_checks.adapters.torch_summary import PIECE_WORDS, POOL_FROM_ELEMENTS

SRC = Path(__file__).resolve().parents[2] / "src"

# Sizes (in float32 elements) around the word, block and piece boundaries of the implementations.
SIZES = [1, 2, 3, 2 * BLOCK_WORDS - 1, 2 * BLOCK_WORDS, 2 * BLOCK_WORDS + 3, 2 * PIECE_WORDS + 5, 5 * PIECE_WORDS + 1]


def test_digest_of_fixed_values_is_pinned():
    """The format: any change to the algorithm changes these, and fingerprints stop comparing."""
    assert digest(np.arange(10, dtype=np.float32)) == "995d0929970096cb"
    assert digest(np.arange(200000, dtype=np.int64) % 7) == "15503194aec1f4d9"
    assert digest(np.zeros(0, dtype=np.float32)) == "7d6e4ac38b2b1be2"


def test_same_digest_in_another_process():
    script = "import numpy as np; from acclint.runtime_checks.model.contenthash import digest; " \
             "print(digest(np.linspace(-3, 3, 300001, dtype=np.float32)))"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])),
               PYTHONHASHSEED="123")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == digest(np.linspace(-3, 3, 300001, dtype=np.float32))


@pytest.mark.parametrize("size", SIZES)
def test_torch_on_the_device_equals_numpy_on_the_host(torch, size):
    values = np.random.default_rng(size).standard_normal(size).astype(np.float32)
    host_stats, host_digest = summarize(values)
    device_stats, device_digest = summarize(torch.from_numpy(values))
    assert device_digest == host_digest
    for key in ("mean", "std", "min", "max", "norm"):
        assert device_stats[key] == pytest.approx(host_stats[key], rel=1e-5, abs=1e-6), key


def test_the_thread_pool_path_gives_the_same_digests(torch):
    """Many tensors (pieces spread over threads) and one at a time (inline) agree."""
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal(n).astype(np.float32) for n in (POOL_FROM_ELEMENTS, 3 * PIECE_WORDS + 7, 11)]
    together = summarize_many([torch.from_numpy(a) for a in arrays])
    assert [d for _, d in together] == [digest(a) for a in arrays]


def test_layout_and_strides_do_not_matter(torch):
    base = torch.randn(64, 3, 9, 17)
    views = {
        "transposed": base.transpose(0, 3),
        "channels_last": base.contiguous(memory_format=torch.channels_last),
        "sliced": base[:, 1:, ::2],
        "expanded": torch.randn(1, 300).expand(5, 300),
    }
    for name, view in views.items():
        assert summarize(view)[1] == summarize(view.contiguous())[1] == digest(view.contiguous().numpy()), name


def test_half_precision_hashes_as_its_float32_values(torch):
    """The fingerprint compares by value: a bfloat16 weight equals its exact float32 upcast."""
    for dtype in (torch.bfloat16, torch.float16):
        narrow = torch.randn(1001, 3).to(dtype)
        wide = narrow.float()
        assert summarize(narrow)[1] == summarize(wide)[1] == digest(wide.numpy()), dtype
        assert summarize(narrow)[0]["norm"] == pytest.approx(summarize(wide)[0]["norm"], rel=1e-6)


def test_integers_hash_by_value_whatever_their_width(torch):
    labels = np.arange(1000) % 13
    assert (summarize(torch.from_numpy(labels))[1] == summarize(labels.astype(np.int32))[1]
            == summarize(torch.from_numpy(labels).to(torch.int32))[1] == digest(labels))
    flags = np.arange(30) % 3 == 0
    assert summarize(torch.from_numpy(flags))[1] == digest(flags.astype(np.int64))


def test_every_kind_of_change_changes_the_digest():
    rng = np.random.default_rng(3)
    values = rng.standard_normal(3 * BLOCK_WORDS).astype(np.float32)
    changed = {}
    one_ulp = values.copy()
    one_ulp[12345] = np.nextafter(one_ulp[12345], np.float32(np.inf))
    changed["one ulp"] = one_ulp
    two_signs = values.copy()
    two_signs[[4, 7]] *= -1  # high-bit-only changes that a plain sum of products would cancel
    changed["two signs"] = two_signs
    changed["negated"] = -values
    swapped = values.copy()
    swapped[[10, 20]] = swapped[[20, 10]]
    changed["two elements swapped"] = swapped
    changed["two blocks swapped"] = np.concatenate([values[2 * BLOCK_WORDS:], values[:2 * BLOCK_WORDS]])
    changed["a zero appended"] = np.append(values, np.float32(0))
    reference = digest(values)
    digests = {name: digest(array) for name, array in changed.items()}
    for name, value in digests.items():
        assert value != reference, name
    assert len(set(digests.values())) == len(digests)
    assert digest(np.zeros(4, np.float32)) != digest(np.array([0, 0, 0, -0.0], np.float32))


def test_distinct_small_tensors_never_collide():
    """Birthday bound at 64 bits: any collision among 2**18 digests would mean a broken mix."""
    rows = np.arange(1 << 18, dtype=np.int64).reshape(-1, 1)
    block_sums = contenthash.mix_blocks_numpy(rows.view(np.uint64))
    digests = {contenthash.finish(contenthash.combine_numpy(np.array([s])), 8) for s in block_sums}
    assert len(digests) == 1 << 18


def test_every_available_device_agrees_with_the_host(torch):
    values = torch.randn(3, PIECE_WORDS + 17, dtype=torch.bfloat16)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        assert summarize(values.to(device))[1] == digest(values.float().numpy()), device
