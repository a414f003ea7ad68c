import argparse

import torch
import torch_npu
from torch import nn


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seq-length", type=int, default=1024)
    parser.add_argument("--pre-tockens", type=int, default=65536)
    parser.add_argument("--hidden-size", type=int, default=256)
    parser.add_argument("--num-attention-heads", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1234)
    return parser.parse_args()


class CausalAttention(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.heads = args.num_attention_heads
        self.pre_tockens = args.pre_tockens
        self.scale = (args.hidden_size // self.heads) ** -0.5
        self.qkv = nn.Linear(args.hidden_size, 3 * args.hidden_size)

    def forward(self, x):
        seq = x.shape[1]
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        mask = torch.triu(torch.ones(seq, seq, device=x.device), diagonal=1).bool()
        return torch_npu.npu_fusion_attention(
            q, k, v, self.heads, "BSH", atten_mask=mask, scale=self.scale,
            pre_tockens=self.pre_tockens, next_tockens=0,
        )[0]


def main():
    args = parse()
    torch.manual_seed(args.seed)
    model = CausalAttention(args).npu().bfloat16()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(1, args.seq_length, args.hidden_size).npu().bfloat16()
    for step in range(10):
        loss = model(x).float().pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
