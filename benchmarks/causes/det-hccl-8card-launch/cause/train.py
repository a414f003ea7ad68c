import os

import torch
import torch.distributed as dist
import torch_npu  # noqa: F401
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group(backend="hccl")
    rank = int(os.environ["LOCAL_RANK"])
    torch.manual_seed(0)
    torch.npu.set_device(rank)
    torch.use_deterministic_algorithms(True)
    model = DDP(nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 8)).npu(), device_ids=[rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x, y = torch.randn(16, 64).npu(), torch.randint(0, 8, (16,)).npu()
    for step in range(100):
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
