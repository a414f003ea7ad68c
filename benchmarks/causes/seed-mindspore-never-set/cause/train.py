import mindspore as ms
import numpy as np
from mindspore import nn


class Regressor(nn.Cell):
    def __init__(self):
        super().__init__()
        self.body = nn.SequentialCell(nn.Dense(6, 24), nn.ReLU(), nn.Dense(24, 1))

    def construct(self, x):
        return self.body(x)


def main():
    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="Ascend")
    net = Regressor()
    loss_fn = nn.MSELoss()
    optimizer = nn.Adam(net.trainable_params(), learning_rate=1e-3)

    def forward(x, y):
        return loss_fn(net(x), y)

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)
    x = ms.Tensor(np.ones((64, 6), np.float32))
    y = ms.Tensor(np.zeros((64, 1), np.float32))
    net.set_train()
    for step in range(30):
        loss, grads = grad_fn(x, y)
        optimizer(grads)


if __name__ == "__main__":
    main()
