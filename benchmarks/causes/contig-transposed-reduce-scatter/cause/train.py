import os

import torch
import torch.distributed as dist
import torch_npu  # noqa: F401
from torch import nn


class ColumnParallel(nn.Module):
    def __init__(self, dim, world):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim, dim // world) * 0.02)

    def forward(self, x):
        return x @ self.weight


def reduce_grad(param, world):
    grad = param.grad.t()
    shard = torch.empty(grad.shape[0] // world, grad.shape[1], device=grad.device)
    dist.reduce_scatter_tensor(shard, grad)
    return shard


def main():
    dist.init_process_group("hccl")
    world = dist.get_world_size()
    torch.npu.set_device(int(os.environ["LOCAL_RANK"]))
    torch.manual_seed(0)
    layer = ColumnParallel(64, world).npu()
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.01)
    x = torch.randn(8, 64).npu()
    for step in range(10):
        loss = layer(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        reduce_grad(layer.weight, world)
        optimizer.step()


if __name__ == "__main__":
    main()
