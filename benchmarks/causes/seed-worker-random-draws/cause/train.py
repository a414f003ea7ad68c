import random

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class NoisyCrops(Dataset):
    def __init__(self, n=256):
        self.data = torch.randn(n, 40)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        start = random.randint(0, 8)
        return self.data[index, start:start + 32], index % 2


def main():
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    loader = DataLoader(NoisyCrops(), batch_size=32, shuffle=True, num_workers=4)
    model = nn.Linear(32, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
