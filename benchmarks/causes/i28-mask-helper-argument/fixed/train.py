import torch
import torch_npu
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def _npu_mask(self, attention_mask):
        """The GPU path's additive mask (0 attend, -inf padding) made boolean for the fused kernel."""
        return attention_mask.to(torch.bool)  # True where -inf: masked, as npu_fusion_attention reads it

    def forward(self, x, lengths):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        keep = torch.arange(x.shape[1], device=x.device)[None, :] < lengths[:, None]
        additive = torch.zeros(keep.shape, device=x.device).masked_fill(~keep, float("-inf"))
        mask = self._npu_mask(additive)[:, None, None, :]
        y = torch_npu.npu_fusion_attention(q, k, v, self.heads, "BSH", atten_mask=mask, scale=self.scale)[0]
        return self.out(y)


def main():
    torch.manual_seed(0)
    model = Attention(dim=64, heads=4).npu()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(2, 16, 64).npu()
    lengths = torch.tensor([16, 9]).npu()
    for step in range(20):
        loss = model(x, lengths).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
