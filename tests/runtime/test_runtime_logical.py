"""Merging rank parts without processes: which blocks make a tensor, and the models parts must describe."""

from __future__ import annotations

import numpy as np
import pytest

from acclint.runtime import FingerprintError
from acclint.runtime_checks.distributed.logical import Block, RankPart, assemble, plan
from acclint.runtime_checks.model.sharding import Piece, TensorParallel, piece_of


def block(name: str, global_shape: tuple, offset: tuple, shape: tuple, shared: bool = False) -> Block:
    return Block(name, name, "Linear", True, "float32", Piece(global_shape, offset, shape), shared)


def part(rank: int, *blocks: Block) -> RankPart:
    return RankPart(rank, list(blocks), [], fingerprint=None)


def test_tensor_parallel_blocks_and_replicas_make_one_tensor_each():
    parts = [part(rank, block("w", (4, 6), (0, 3 * (rank % 2)), (4, 3)), block("b", (4,), (0,), (4,)))
             for rank in range(4)]  # TP=2 x DP=2: ranks 2 and 3 replicate ranks 0 and 1
    logical = plan(parts)
    assert [(e.name, [rank for rank, _ in e.sources]) for e in logical] == [("w", [0, 1]), ("b", [0])]


def test_blocks_that_do_not_cover_the_tensor_are_missing_parts():
    parts = [part(0, block("w", (4, 6), (0, 0), (4, 3)))]  # rank 1's half never arrived
    with pytest.raises(FingerprintError, match=r"blocks of w \[4, 6\] held by rank\(s\) \[0\] cover 12 of 24 elements"):
        plan(parts)


def test_pipeline_stages_hold_disjoint_parameters_and_may_share_tied_embeddings():
    parts = [part(0, block("embed", (8, 2), (0, 0), (8, 2), shared=True), block("layers.0", (2,), (0,), (2,))),
             part(1, block("layers.1", (2,), (0,), (2,)), block("embed", (8, 2), (0, 0), (8, 2), shared=True))]
    assert [e.name for e in plan(parts)] == ["embed", "layers.0", "layers.1"]


def test_overlapping_but_different_parameter_sets_are_not_stages():
    parts = [part(0, block("a", (2,), (0,), (2,)), block("b", (2,), (0,), (2,))), part(1, block("a", (2,), (0,), (2,)))]
    with pytest.raises(FingerprintError, match=r"ranks 0 and 1 disagree on the model's parameters \(only rank 0 has b\)"):
        plan(parts)


def test_assemble_puts_blocks_back_in_the_canonical_layout():
    full = np.arange(24, dtype=np.float32).reshape(4, 6)
    blocks = [(Piece((4, 6), (0, 3 * r), (4, 3)), np.ascontiguousarray(full[:, 3 * r : 3 * r + 3])) for r in (1, 0)]
    assembled = assemble((4, 6), blocks)
    assert assembled.flags.c_contiguous and np.array_equal(assembled, full)


def test_megatron_attributes_give_the_block(torch):
    weight = torch.nn.Parameter(torch.zeros(3, 5))
    weight.tensor_model_parallel, weight.partition_dim, weight.partition_stride = True, 1, 1
    assert piece_of("w", weight, TensorParallel(rank=2, size=4)) == Piece((3, 20), (0, 10), (3, 5))
    with pytest.raises(FingerprintError, match="pass tensor_parallel_group= to capture / Probe"):
        piece_of("w", weight, None)
    weight.partition_stride = 2
    with pytest.raises(FingerprintError, match="stride 2"):
        piece_of("w", weight, TensorParallel(rank=0, size=2))
    plain = torch.nn.Parameter(torch.zeros(3))
    assert piece_of("b", plain, TensorParallel(rank=1, size=2)).whole  # not marked: a full replica
