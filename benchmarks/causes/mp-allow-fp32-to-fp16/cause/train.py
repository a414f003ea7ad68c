import torch
import torch_npu  # noqa: F401
from torch import nn


def setup_npu():
    option = {"ACL_PRECISION_MODE": "allow_fp32_to_fp16"}
    torch.npu.set_option(option)
    torch.npu.set_device(0)


def main():
    setup_npu()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 256), nn.LayerNorm(256), nn.GELU(), nn.Linear(256, 10)).npu()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)
    x, y = torch.randn(64, 128).npu(), torch.randint(0, 10, (64,)).npu()
    for step in range(100):
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
