import os

import torch
import torch.distributed as dist
import torch_npu  # noqa: F401
from torch import nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def main():
    dist.init_process_group("hccl")
    torch.npu.set_device(int(os.environ["LOCAL_RANK"]))
    torch.manual_seed(0)
    model = FSDP(nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256)).npu())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(8, 256).npu()
    for step in range(50):
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        model.clip_grad_norm_(max_norm=1.0)
        optimizer.step()


if __name__ == "__main__":
    main()
