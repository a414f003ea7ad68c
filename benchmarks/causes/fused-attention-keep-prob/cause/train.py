import torch
import torch_npu
from torch import nn


class Block(nn.Module):
    def __init__(self, dim, heads, attention_dropout=0.1):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.attention_dropout = attention_dropout
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        y = torch_npu.npu_fusion_attention(
            q, k, v, self.heads, "BSH", scale=self.scale, keep_prob=self.attention_dropout,
        )[0]
        return self.out(y)


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
