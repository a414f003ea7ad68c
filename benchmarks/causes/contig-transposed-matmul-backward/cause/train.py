import torch
import torch_npu  # noqa: F401
from torch import nn


class LinearFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return x @ weight.t()

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        grad_x = grad_out @ weight
        grad_w = torch.matmul(grad_out.t(), x)
        return grad_x, grad_w


class Column(nn.Module):
    def __init__(self, din, dout):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dout, din) * 0.02)

    def forward(self, x):
        return LinearFn.apply(x, self.weight)


def main():
    torch.manual_seed(0)
    model = nn.Sequential(Column(32, 64), nn.ReLU(), Column(64, 4)).npu()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(16, 32).npu(), torch.randint(0, 4, (16,)).npu()
    for step in range(30):
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
