import torch
import torch_npu  # noqa: F401
from torch import nn


def main():
    torch.manual_seed(0)
    device = torch.device("npu:0")
    model = nn.Linear(32, 8).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler("npu")
    x, y = torch.randn(16, 32, device=device), torch.randn(16, 8, device=device)
    for step in range(100):
        with torch.autocast(device_type="npu", dtype=torch.float16):
            loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


if __name__ == "__main__":
    main()
