"""fp16 training with a GradScaler: the gradients are unscaled for clipping, then the optimizer steps itself."""

import torch
from torch import nn


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda")
    for step in range(1000):
        x, y = torch.randn(64, 256, device="cuda"), torch.randint(0, 10, (64,), device="cuda")
        with torch.autocast("cuda", dtype=torch.float16):
            loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scaler.update()


if __name__ == "__main__":
    main()
