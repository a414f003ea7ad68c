import torch
from torch import nn


class EncoderConfig:
    def __init__(self, vocab_size=500, hidden_size=64, layer_norm_eps=1e-12, num_labels=3):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.layer_norm_eps = layer_norm_eps
        self.num_labels = num_labels


class Embeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, ids):
        return self.norm(self.tokens(ids))


class Pooler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.cls = nn.Linear(config.hidden_size, config.num_labels)

    def forward(self, h):
        return self.cls(self.norm(torch.tanh(self.dense(h[:, 0]))))


class Classifier(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embeddings = Embeddings(config)
        self.pooler = Pooler(config)

    def forward(self, ids):
        return self.pooler(self.embeddings(ids))
