"""A rotary transformer block trained in bfloat16 by casting the whole model with .to()."""

import torch
from torch import nn


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        # A plain attribute, not a buffer: model.to(torch.bfloat16) leaves it in float32.
        self.inv_freq = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)

    def forward(self, x):
        t = torch.arange(x.shape[1], device=x.device, dtype=torch.float32)
        freqs = torch.outer(t, self.inv_freq.to(x.device))
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Block(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.rotary = RotaryEmbedding(dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        cos, sin = self.rotary(x)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        attn = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)
        return self.out(attn @ v)


def main():
    torch.manual_seed(0)
    model = Block().cuda().to(torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for step in range(10):
        x = torch.randn(2, 4096, 64, device="cuda", dtype=torch.bfloat16)
        loss = model(x).float().pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
