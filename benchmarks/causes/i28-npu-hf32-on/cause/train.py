import torch
import torch_npu  # noqa: F401
from torch import nn

torch.npu.matmul.allow_hf32 = True


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)).npu()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(128, 512).npu(), torch.randint(0, 10, (128,)).npu()
    for step in range(50):
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
