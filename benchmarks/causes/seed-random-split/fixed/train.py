import random

import torch
from torch import nn


def split(samples, ratio=0.8):
    random.shuffle(samples)
    cut = int(len(samples) * ratio)
    return samples[:cut], samples[cut:]


def main():
    torch.manual_seed(7)
    random.seed(7)
    data = [(torch.randn(4), torch.randn(1)) for _ in range(200)]
    train, val = split(data)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in train:
        loss = (model(x) - y).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(sum((model(x) - y).pow(2).item() for x, y in val) / len(val))


if __name__ == "__main__":
    main()
