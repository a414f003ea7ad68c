import mindspore as ms
import numpy as np
from mindspore import nn

from config import NORM_LAYER


class Block(nn.Cell):
    """Port of a timm-style block: the norm class comes from the project's config module."""

    def __init__(self, dim, norm_layer=NORM_LAYER):
        super().__init__()
        self.norm = norm_layer((dim,))
        self.fc = nn.Dense(dim, dim)

    def construct(self, x):
        return x + self.fc(self.norm(x))


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.blocks = nn.SequentialCell([Block(32) for _ in range(2)])
        self.head = nn.Dense(32, 4)

    def construct(self, x):
        return self.head(self.blocks(x))


def main():
    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="Ascend")
    ms.set_seed(0)
    net = Net()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = nn.Adam(net.trainable_params(), learning_rate=1e-3)

    def forward(x, y):
        return loss_fn(net(x), y)

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)
    x = ms.Tensor(np.random.randn(16, 32).astype(np.float32))
    y = ms.Tensor(np.random.randint(0, 4, (16,)).astype(np.int32))
    net.set_train()
    for step in range(20):
        loss, grads = grad_fn(x, y)
        optimizer(grads)


if __name__ == "__main__":
    main()
