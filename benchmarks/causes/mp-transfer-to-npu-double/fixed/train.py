import torch
import torch_npu  # noqa: F401
from torch import nn
from torch_npu.contrib import transfer_to_npu  # noqa: F401

from metrics import RunningMean


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    meter = RunningMean()
    x, y = torch.randn(1024, 16).cuda(), torch.randn(1024, 1).cuda()
    for step in range(1000):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        meter.update(loss)
    print("mean loss", meter.mean())


if __name__ == "__main__":
    main()
