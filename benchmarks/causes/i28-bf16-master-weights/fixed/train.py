"""Fine-tuning a small language-model head in bfloat16 under autocast: the weights, and so the updates, stay float32."""

import torch
from torch import nn


def build_model(vocab=512, dim=128):
    return nn.Sequential(nn.Embedding(vocab, dim), nn.LayerNorm(dim), nn.Linear(dim, vocab))


def main():
    torch.manual_seed(0)
    model = build_model().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.0)
    tokens = torch.randint(0, 512, (8, 65), device="cuda")
    for step in range(100):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(tokens[:, :-1]).float()
        loss = nn.functional.cross_entropy(logits.reshape(-1, 512), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
