import torch
import torch_npu  # noqa: F401
from torch import nn

import torch.distributed as dist


def main():
    dist.init_process_group("hccl")
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Linear(64, 64).npu())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.npu.amp.GradScaler()
    x = torch.randn(32, 64).npu()
    for step in range(100):
        with torch.npu.amp.autocast():
            loss = model(x).float().pow(2).mean()
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


if __name__ == "__main__":
    main()
