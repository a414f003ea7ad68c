import torch
import torch_npu  # noqa: F401
from msprobe.pytorch import PrecisionDebugger
from torch import nn

debugger = PrecisionDebugger(config_path="./config.json")


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 2)).npu()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 16).npu(), torch.randint(0, 2, (8,)).npu()
    for step in range(5):
        debugger.start(model)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        debugger.stop()
        debugger.step()


if __name__ == "__main__":
    main()
