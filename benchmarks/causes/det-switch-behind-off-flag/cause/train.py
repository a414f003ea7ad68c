import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--deterministic", action="store_true")
parser.add_argument("--lr", type=float, default=0.01)


def main():
    args = parser.parse_args()
    torch.manual_seed(0)
    if args.deterministic:
        torch.use_deterministic_algorithms(True)
    model = nn.Sequential(nn.Conv1d(4, 8, 3), nn.ReLU(), nn.AdaptiveMaxPool1d(1), nn.Flatten(), nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    x, y = torch.randn(32, 4, 50), torch.randint(0, 2, (32,))
    for step in range(20):
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
