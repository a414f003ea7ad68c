import torch
import torch_npu
from torch import nn


class Block(nn.Module):
    """Feed-forward with GeGLU: the GPU original computes gelu(first half) * second half, erf GELU."""

    def __init__(self, dim, heads):
        super().__init__()
        self.up = nn.Linear(dim, 8 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x):
        hidden = torch_npu.npu_geglu(self.up(x), dim=-1, approximate=0, activate_left=True)[0]
        return x + self.down(hidden)


def main():
    torch.manual_seed(0)
    model = Block(dim=64, heads=4).npu()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(2, 16, 64).npu().half()
    model.half()
    for step in range(20):
        loss = model(x).float().pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
