import argparse
import random

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=None)
parser.add_argument("--epochs", type=int, default=5)


def main():
    args = parser.parse_args()
    if args.seed is not None:
        random.seed(args.seed)
        torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(10, 10), nn.GELU(), nn.Linear(10, 2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    x, y = torch.randn(256, 10), torch.randint(0, 2, (256,))
    for epoch in range(args.epochs):
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
