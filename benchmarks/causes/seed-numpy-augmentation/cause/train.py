import numpy as np
import torch
from torch import nn


def jitter(batch):
    noise = np.random.normal(0.0, 0.1, size=batch.shape).astype(np.float32)
    return batch + torch.from_numpy(noise)


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    inputs, targets = torch.randn(128, 8), torch.randn(128, 1)
    for epoch in range(20):
        loss = nn.functional.mse_loss(model(jitter(inputs)), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
