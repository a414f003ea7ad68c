import mindspore as ms
import numpy as np
from mindspore import nn


class Discriminator(nn.Cell):
    """Port of a PyTorch discriminator whose LeakyReLU keeps its default slope 0.01."""

    def __init__(self):
        super().__init__()
        self.body = nn.SequentialCell(nn.Dense(28 * 28, 128), nn.LeakyReLU(), nn.Dense(128, 1))

    def construct(self, x):
        return self.body(x)


def main():
    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="Ascend")
    ms.set_seed(0)
    net = Discriminator()
    loss_fn = nn.BCEWithLogitsLoss()
    optimizer = nn.Adam(net.trainable_params(), learning_rate=2e-4, beta1=0.5)

    def forward(x, y):
        return loss_fn(net(x), y)

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)
    x = ms.Tensor(np.random.randn(32, 28 * 28).astype(np.float32))
    y = ms.Tensor(np.random.randint(0, 2, (32, 1)).astype(np.float32))
    net.set_train()
    for step in range(50):
        loss, grads = grad_fn(x, y)
        optimizer(grads)


if __name__ == "__main__":
    main()
