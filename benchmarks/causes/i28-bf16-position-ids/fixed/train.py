import torch
from torch import nn


class Rotary(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / base ** (torch.arange(0, dim, 2).float() / dim))

    def forward(self, x):
        positions = torch.arange(x.shape[1], device=x.device, dtype=torch.float32)
        angles = torch.outer(positions, self.inv_freq.float())
        cos, sin = angles.cos().repeat(1, 2).to(x.dtype), angles.sin().repeat(1, 2).to(x.dtype)
        return x * cos + x.roll(1, -1) * sin


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), Rotary(64), nn.Linear(64, 64)).cuda().to(torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(2, 2048, 64, device="cuda", dtype=torch.bfloat16)
    for step in range(10):
        loss = model(x).float().pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
