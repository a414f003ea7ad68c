"""Where one rank's tensor sits in the full logical tensor: DTensor placements, Megatron attributes.

A sharded parameter is described by its `Piece`: the global (logical) shape and the offset of
this rank's block in it. Two conventions are read, nothing is guessed:

* DTensor (torch.distributed.tensor: `parallelize_module`, FSDP2 `fully_shard`): the tensor knows
  its mesh and placements; torch computes the block's shape and offset.
* Megatron-LM / MindSpeed: the parameter is a plain tensor carrying `tensor_model_parallel=True`,
  `partition_dim` and `partition_stride`; the tensor-parallel rank and size come from Megatron's
  `parallel_state` when it is initialised, or from the group the caller passes.

Anything else is a full copy (a data-parallel replica, or a pipeline stage's own layer).
No framework is imported at module level.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from acclint.runtime_checks.model.errors import FingerprintError

# Megatron's module with the tensor-parallel group (MindSpeed patches the same module).
MEGATRON_PARALLEL_STATE = "megatron.core.parallel_state"
# Attributes Megatron puts on parameters that pipeline stages share (tied word embeddings).
SHARED_ATTRIBUTES = ("shared_embedding", "shared")


@dataclass(frozen=True)
class Piece:
    """One rank's block of a logical tensor."""

    global_shape: tuple[int, ...]
    offset: tuple[int, ...]
    shape: tuple[int, ...]  # the block's own shape

    @property
    def whole(self) -> bool:
        return self.shape == self.global_shape

    @property
    def numel(self) -> int:
        count = 1
        for n in self.shape:
            count *= n
        return count


@dataclass(frozen=True)
class TensorParallel:
    """This rank's position in its tensor-parallel group (Megatron-style parameters only)."""

    rank: int
    size: int


def is_dtensor(tensor: Any) -> bool:
    return hasattr(tensor, "placements") and hasattr(tensor, "to_local") and hasattr(tensor, "device_mesh")


def local_tensor(tensor: Any) -> Any:
    """The plain tensor this rank holds: a DTensor's local block, anything else itself."""
    return tensor.to_local() if is_dtensor(tensor) else tensor


def shared_across_stages(tensor: Any) -> bool:
    """Whether Megatron marked the parameter as held by several pipeline stages (tied embeddings)."""
    return any(getattr(tensor, attribute, False) is True for attribute in SHARED_ATTRIBUTES)


def tensor_parallel_of(group: Any = None) -> TensorParallel | None:
    """The tensor-parallel position from `group` (a torch process group), else from Megatron's
    parallel_state when it is imported and initialised; None when neither is there."""
    if group is not None:
        import torch.distributed as dist

        return TensorParallel(dist.get_rank(group), dist.get_world_size(group))
    state = sys.modules.get(MEGATRON_PARALLEL_STATE)
    if state is not None and getattr(state, "model_parallel_is_initialized", lambda: False)():
        return TensorParallel(state.get_tensor_model_parallel_rank(), state.get_tensor_model_parallel_world_size())
    return None


def piece_of(name: str, tensor: Any, tensor_parallel: TensorParallel | None) -> Piece:
    """Where this rank's `tensor` (named `name`, for messages) sits in its logical tensor."""
    if is_dtensor(tensor):
        return _dtensor_piece(name, tensor)
    shape = tuple(int(n) for n in tensor.shape)
    if getattr(tensor, "tensor_model_parallel", False) is True:
        return _megatron_piece(name, tensor, shape, tensor_parallel)
    return Piece(shape, (0,) * len(shape), shape)


def _dtensor_piece(name: str, tensor: Any) -> Piece:
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor._utils import compute_local_shape_and_global_offset

    odd = [p for p in tensor.placements if type(p) not in (Shard, Replicate)]
    if odd:
        raise FingerprintError(
            f"parameter {name} is a DTensor placed as {list(tensor.placements)}: only Shard and Replicate "
            "placements can be read back into the full tensor"
        )
    global_shape = tuple(int(n) for n in tensor.shape)
    shape, offset = compute_local_shape_and_global_offset(tensor.shape, tensor.device_mesh, tensor.placements)
    return Piece(global_shape, tuple(int(n) for n in offset), tuple(int(n) for n in shape))


def _megatron_piece(name: str, tensor: Any, shape: tuple[int, ...], tensor_parallel: TensorParallel | None) -> Piece:
    dim = getattr(tensor, "partition_dim", -1)
    stride = getattr(tensor, "partition_stride", 1)
    if not isinstance(dim, int) or not 0 <= dim < len(shape):
        raise FingerprintError(f"parameter {name} is marked tensor_model_parallel but its partition_dim is {dim!r}")
    if stride != 1:
        raise FingerprintError(
            f"parameter {name} is partitioned with stride {stride}: only contiguous partitions (stride 1) are read"
        )
    if tensor_parallel is None:
        raise FingerprintError(
            f"parameter {name} is marked tensor_model_parallel, but the tensor-parallel group is unknown: "
            "initialise megatron.core.parallel_state, or pass tensor_parallel_group= to capture / Probe"
        )
    global_shape = list(shape)
    global_shape[dim] = shape[dim] * tensor_parallel.size
    offset = [0] * len(shape)
    offset[dim] = shape[dim] * tensor_parallel.rank
    return Piece(tuple(global_shape), tuple(offset), shape)
