import torch
from torch import nn


class Scatterer(nn.Module):
    """Pools token features per segment with index_add_ (atomic adds on the accelerator)."""

    def __init__(self, dim=32, segments=4):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.segments = segments
        self.cls = nn.Linear(dim, 2)

    def forward(self, x, seg):
        pooled = torch.zeros(self.segments, x.shape[-1], device=x.device)
        pooled = pooled.index_add(0, seg, self.proj(x))
        return self.cls(pooled)


def main():
    torch.manual_seed(0)
    model = Scatterer()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 32)
    seg = torch.randint(0, 4, (64,))
    target = torch.randint(0, 2, (4,))
    for step in range(20):
        loss = nn.functional.cross_entropy(model(x, seg), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
