import torch
from torch import nn


def make_model():
    return nn.Sequential(
        nn.Conv2d(1, 8, 5), nn.BatchNorm2d(8), nn.ReLU(),
        nn.Conv2d(8, 16, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10),
    )


def main():
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = make_model().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    images = torch.randn(64, 1, 28, 28, device=device)
    labels = torch.randint(0, 10, (64,), device=device)
    for step in range(30):
        loss = nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
