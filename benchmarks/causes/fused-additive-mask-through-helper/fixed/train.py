import torch
import torch_npu
from torch import nn


def padding_mask(lengths, seq):
    """The GPU code's additive key-padding bias (0 real, -inf padding), made boolean for the fused kernel."""
    keep = torch.arange(seq, device=lengths.device)[None, :] < lengths[:, None]
    bias = torch.zeros(keep.shape, device=lengths.device).masked_fill(~keep, float("-inf"))
    return (bias != 0)[:, None, None, :]  # npu_fusion_attention masks where True


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, lengths):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        mask = padding_mask(lengths, x.shape[1])
        y = torch_npu.npu_fusion_attention(q, k, v, self.heads, "BSH", atten_mask=mask, scale=self.scale)[0]
        return self.out(y)


def main():
    torch.manual_seed(0)
    model = Block(dim=64, heads=4).npu().half()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(2, 16, 64).npu().half()
    lengths = torch.tensor([16, 9]).npu()
    for step in range(20):
        loss = model(x, lengths).float().pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
