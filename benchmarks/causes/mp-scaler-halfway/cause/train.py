import torch
from torch import nn


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 40), nn.ReLU(), nn.Linear(40, 1)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cuda")
    x, y = torch.randn(64, 20).cuda(), torch.randn(64, 1).cuda()
    for step in range(200):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        optimizer.step()


if __name__ == "__main__":
    main()
