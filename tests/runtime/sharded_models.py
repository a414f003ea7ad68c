"""The tiny models of the distributed-capture tests, in one process and split over 2 ranks.

Every parallel variant is built from the same full model (same seed, same weights) so that a
fingerprint of the split model must equal the single-process one. The Megatron-style layers are
written here the way Megatron-LM's ColumnParallelLinear / RowParallelLinear hold their weights:
plain tensors with `tensor_model_parallel`, `partition_dim` and `partition_stride` attributes.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

IN, HIDDEN, OUT, BATCH = 8, 16, 4, 12


def mlp(extra: bool = False) -> torch.nn.Sequential:
    """Linear -> ReLU -> Linear -> LayerNorm (the single-process reference and the DDP / FSDP model)."""
    torch.manual_seed(0)
    layers = [torch.nn.Linear(IN, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, OUT), torch.nn.LayerNorm(OUT)]
    if extra:
        layers.append(torch.nn.Linear(OUT, OUT))
    return torch.nn.Sequential(*layers)


def batch(seed: int = 7, size: int = BATCH) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(size, IN, generator=generator), torch.randn(size, OUT, generator=generator)


def batch_shard(rank: int, world_size: int) -> tuple[torch.Tensor, ...]:
    """This data-parallel rank's samples of batch()."""
    return tuple(t.chunk(world_size)[rank] for t in batch())


def loss_fn(model: torch.nn.Module, data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    inputs, targets = data
    return torch.nn.functional.mse_loss(model(inputs), targets)


# ---------------------------------------------------------------------------- DTensor tensor parallel
def dtensor_tp() -> torch.nn.Module:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    return parallelize_module(mlp(), mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})


# ---------------------------------------------------------------------------- Megatron-style tensor parallel
class _CopyToTensorParallel(torch.autograd.Function):
    """Identity forward; the gradient of a replicated input is the sum of the ranks' gradients."""

    @staticmethod
    def forward(ctx, x):  # noqa: ANN001, ANN205
        return x

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001, ANN205
        grad = grad.clone()
        dist.all_reduce(grad)
        return grad


class _ReduceFromTensorParallel(torch.autograd.Function):
    """Sum of the ranks' partial outputs forward; the gradient passes through unchanged."""

    @staticmethod
    def forward(ctx, x):  # noqa: ANN001, ANN205
        x = x.clone()
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001, ANN205
        return grad


def _mark(parameter: torch.nn.Parameter, dim: int) -> torch.nn.Parameter:
    # What megatron.core.tensor_parallel.layers.set_tensor_model_parallel_attributes sets.
    parameter.tensor_model_parallel = True
    parameter.partition_dim = dim
    parameter.partition_stride = 1
    return parameter


class ColumnParallelLinear(torch.nn.Module):
    """Output features split over the ranks: weight [out/tp, in] (partition_dim 0), bias [out/tp]."""

    def __init__(self, full: torch.nn.Linear, rank: int, size: int) -> None:
        super().__init__()
        self.weight = _mark(torch.nn.Parameter(full.weight.detach().chunk(size, 0)[rank].clone()), 0)
        self.bias = _mark(torch.nn.Parameter(full.bias.detach().chunk(size, 0)[rank].clone()), 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(_CopyToTensorParallel.apply(x), self.weight, self.bias)


class RowParallelLinear(torch.nn.Module):
    """Input features split over the ranks: weight [out, in/tp] (partition_dim 1), bias replicated."""

    def __init__(self, full: torch.nn.Linear, rank: int, size: int) -> None:
        super().__init__()
        self.weight = _mark(torch.nn.Parameter(full.weight.detach().chunk(size, 1)[rank].clone()), 1)
        self.bias = torch.nn.Parameter(full.bias.detach().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ReduceFromTensorParallel.apply(torch.nn.functional.linear(x, self.weight)) + self.bias


def megatron_tp(rank: int, size: int) -> torch.nn.Sequential:
    full = mlp()
    return torch.nn.Sequential(ColumnParallelLinear(full[0], rank, size), torch.nn.ReLU(),
                               RowParallelLinear(full[2], rank, size), full[3])


def probe_steps(probe, model: torch.nn.Module, optimizer: torch.optim.Optimizer, loss_of=loss_fn) -> None:  # noqa: ANN001
    """Two plain training steps with the probe recording them (the loop a Megatron user keeps)."""
    for step, data in enumerate((batch(), batch(seed=8))):
        loss = loss_of(model, data)
        loss.backward()
        optimizer.step()
        probe.record(step, loss, batch=data if step == 0 else None)
        optimizer.zero_grad()


# ---------------------------------------------------------------------------- pipeline parallel
def deep(layers: tuple[int, ...] = (0, 1, 2, 3)) -> torch.nn.Module:
    """Four Linear layers named layers.0 ... layers.3; a pipeline stage keeps only its own."""
    torch.manual_seed(0)
    sizes = [IN, HIDDEN, HIDDEN, HIDDEN, OUT]
    full = [torch.nn.Linear(sizes[i], sizes[i + 1]) for i in range(4)]
    model = torch.nn.Module()
    model.layers = torch.nn.ModuleDict({str(i): full[i] for i in layers})
    return model


def run_layers(model: torch.nn.Module, h: torch.Tensor) -> torch.Tensor:
    for name, layer in model.layers.items():
        h = layer(h)
        if name != "3":
            h = torch.relu(h)
    return h


def pipeline_stage(rank: int) -> torch.nn.Module:
    return deep((0, 1) if rank == 0 else (2, 3))


def pipeline_step(stage: torch.nn.Module, optimizer: torch.optim.Optimizer, data: tuple, rank: int) -> torch.Tensor | None:
    """One step over 2 stages: activations forward to rank 1, their gradient back to rank 0."""
    inputs, targets = data
    if rank == 0:
        hidden = run_layers(stage, inputs)
        dist.send(hidden.detach(), dst=1)
        grad = torch.empty_like(hidden)
        dist.recv(grad, src=1)
        hidden.backward(grad)
        optimizer.step()
        return None
    hidden = torch.empty(inputs.shape[0], HIDDEN)
    dist.recv(hidden, src=0)
    hidden.requires_grad_(True)
    loss = torch.nn.functional.mse_loss(run_layers(stage, hidden), targets)
    loss.backward()
    dist.send(hidden.grad, dst=0)
    optimizer.step()
    return loss


def deep_loss(model: torch.nn.Module, data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    return torch.nn.functional.mse_loss(run_layers(model, data[0]), data[1])
