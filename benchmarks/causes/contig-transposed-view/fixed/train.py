import torch
import torch_npu  # noqa: F401
from torch import nn


class HeadMerge(nn.Module):
    """Self-attention whose heads are merged with a view of the transposed matmul output."""

    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = (t.reshape(b, s, self.heads, d // self.heads).transpose(1, 2) for t in self.qkv(x).chunk(3, -1))
        probs = torch.softmax(q @ k.transpose(-2, -1) * (d // self.heads) ** -0.5, dim=-1)
        out = torch.matmul(probs, v)
        merged = out.transpose(1, 2).contiguous().view(b, s, d)
        return merged


def main():
    torch.manual_seed(0)
    model = nn.Sequential(HeadMerge(), nn.Linear(64, 2)).npu()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(4, 10, 64).npu(), torch.randint(0, 2, (4, 10)).npu()
    for step in range(20):
        loss = nn.functional.cross_entropy(model(x).reshape(-1, 2), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
