import torch
import torch.nn.functional as F
from torch import nn

ACCUMULATION = 4


def batches():
    for _ in range(32):
        tokens = torch.randint(0, 50, (2, 16))
        labels = tokens.clone()
        labels[:, torch.randint(4, 16, (1,)).item():] = -100
        yield tokens, labels


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(50, 32), nn.Linear(32, 50))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step, (tokens, labels) in enumerate(batches()):
        logits = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)
        loss = loss / ACCUMULATION
        loss.backward()
        if (step + 1) % ACCUMULATION == 0:
            optimizer.step()
            optimizer.zero_grad()


if __name__ == "__main__":
    main()
