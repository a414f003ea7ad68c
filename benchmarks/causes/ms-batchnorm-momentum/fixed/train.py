import mindspore as ms
import numpy as np
from mindspore import nn


class Net(nn.Cell):
    """Port of a PyTorch CNN (BatchNorm2d with PyTorch's default momentum)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, pad_mode="pad", padding=1, has_bias=True)
        self.bn = nn.BatchNorm2d(16, momentum=0.9)
        self.act = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Dense(16, 4)

    def construct(self, x):
        h = self.pool(self.act(self.bn(self.conv(x))))
        return self.fc(h.reshape(h.shape[0], -1))


def make_batch():
    x = ms.Tensor(np.random.randn(8, 3, 16, 16).astype(np.float32))
    y = ms.Tensor(np.random.randint(0, 4, (8,)).astype(np.int32))
    return x, y


def main():
    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="Ascend")
    ms.set_seed(0)
    ms.set_deterministic(True)
    net = Net()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = nn.Adam(net.trainable_params(), learning_rate=1e-3)

    def forward(x, y):
        return loss_fn(net(x), y)

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)
    x, y = make_batch()
    net.set_train()
    for step in range(50):
        loss, grads = grad_fn(x, y)
        optimizer(grads)


if __name__ == "__main__":
    main()
