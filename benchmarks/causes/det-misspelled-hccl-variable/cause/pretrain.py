import os

import torch
import torch.distributed as dist
import torch_npu  # noqa: F401
from torch import nn


def main():
    dist.init_process_group("hccl")
    torch.manual_seed(0)
    torch.npu.set_device(int(os.environ["LOCAL_RANK"]))
    model = nn.parallel.DistributedDataParallel(nn.Linear(32, 32).npu())
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    x = torch.randn(8, 32).npu()
    for step in range(100):
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
