import torch
from torch import nn

from model import Classifier, EncoderConfig


def main():
    torch.manual_seed(0)
    model = Classifier(EncoderConfig())
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    ids, labels = torch.randint(0, 500, (16, 12)), torch.randint(0, 3, (16,))
    for step in range(30):
        loss = nn.functional.cross_entropy(model(ids), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
