import torch
from torch import nn

try:
    import torch_npu  # noqa: F401  (Ascend: registers the "npu" device)
    DEVICE = "npu"
except ImportError:
    DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class TinyCNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(16, classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def main():
    model = TinyCNN().to(DEVICE)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    images = torch.randn(32, 3, 16, 16, device=DEVICE)
    labels = torch.randint(0, 10, (32,), device=DEVICE)
    for step in range(50):
        loss = nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, loss.item())


if __name__ == "__main__":
    main()
