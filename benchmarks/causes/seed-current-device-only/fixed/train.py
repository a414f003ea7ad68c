import os

import torch
import torch.distributed as dist
import torch_npu  # noqa: F401
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("hccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.npu.set_device(local_rank)
    torch.manual_seed(11)
    torch.npu.manual_seed_all(11)
    model = DDP(nn.Linear(16, 4).npu(), device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 16).npu()
    y = torch.randn(32, 4).npu()
    for step in range(10):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
