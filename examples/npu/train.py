"""The port: the same classifier on Ascend NPUs (torch_npu), launched by run_npu.sh."""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

try:
    import torch_npu  # noqa: F401  (registers the NPU backend)
    from torch_npu.contrib import transfer_to_npu  # noqa: F401
except ImportError:
    torch_npu = None

from utils.seeding import seed_all  # the guide's helper... imported, never called


class ConvNet(nn.Module):
    def __init__(self, num_classes: int = 10, dropout: float = 0.1):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.drop = nn.Dropout(p=dropout)
        self.head = nn.Linear(64 * 8 * 8, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.head(self.drop(x.flatten(1)))


def build_data(n: int = 512):
    images = torch.randn(n, 3, 32, 32)
    labels = torch.randint(0, 10, (n,))
    return TensorDataset(images, labels)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--micro-batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()

    dist.init_process_group(backend="hccl")
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    torch.npu.set_device(local_rank)

    model = ConvNet().npu()
    torch.npu.manual_seed(args.seed)  # only the current NPU, and after the model exists
    model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.999), weight_decay=0.1)
    loader = DataLoader(build_data(), batch_size=args.micro_batch_size, shuffle=True)

    for step, (images, labels) in enumerate(loader):
        images, labels = images.npu(), labels.npu()
        loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0 and dist.get_rank() == 0:
            print(f"step {step} loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
