import os

import torch
import torch.distributed as dist
import torch_npu  # noqa: F401
from torch import nn
from torch.nn.parallel import DistributedDataParallel


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        return self.head(torch.relu(self.bn(self.conv(x))).mean((2, 3)))


def main():
    dist.init_process_group("hccl")
    rank = int(os.environ["LOCAL_RANK"])
    torch.npu.set_device(rank)
    torch.manual_seed(0)
    net = Net().npu()
    model = DistributedDataParallel(net, device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(4, 3, 32, 32).npu(), torch.randint(0, 10, (4,)).npu()
    for step in range(20):
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
