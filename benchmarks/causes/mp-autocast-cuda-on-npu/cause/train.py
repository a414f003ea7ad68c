import torch
import torch_npu  # noqa: F401
from torch import nn


def main():
    torch.manual_seed(0)
    device_type = "cuda" if torch.cuda.is_available() else "cpu"
    model = nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 4)).npu()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-4)
    x, y = torch.randn(32, 64).npu(), torch.randint(0, 4, (32,)).npu()
    for step in range(50):
        with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
            logits = model(x)
        loss = nn.functional.cross_entropy(logits.float(), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
