import torch
import torch_npu  # noqa: F401
from torch import nn


def main():
    torch.npu.set_option({"ACL_OP_SELECT_IMPL_MODE": "high_performance",
                          "ACL_OPTYPELIST_FOR_IMPLMODE": "LayerNorm,Softmax"})
    torch.manual_seed(0)
    model = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True).npu()
    head = nn.Linear(64, 2).npu()
    optimizer = torch.optim.Adam(list(model.parameters()) + list(head.parameters()), lr=1e-4)
    x, y = torch.randn(16, 20, 64).npu(), torch.randint(0, 2, (16,)).npu()
    for step in range(50):
        loss = nn.functional.cross_entropy(head(model(x).mean(1)), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
