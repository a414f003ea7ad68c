import torch
from torch import nn

from utils.seeding import seed_all


def main():
    seed_all(1234)
    model = nn.Sequential(nn.Linear(12, 48), nn.SiLU(), nn.Linear(48, 3))
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    x, y = torch.randn(96, 12), torch.randint(0, 3, (96,))
    for step in range(25):
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
