import mindspore as ms
import numpy as np
from mindspore import nn


class Net(nn.Cell):
    """Port of a PyTorch MLP whose dropout drops 10% of activations."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(16, 64)
        self.act = nn.ReLU()
        self.drop = nn.Dropout(p=0.1)
        self.fc2 = nn.Dense(64, 4)

    def construct(self, x):
        return self.fc2(self.drop(self.act(self.fc1(x))))


def make_batch():
    x = ms.Tensor(np.random.randn(32, 16).astype(np.float32))
    y = ms.Tensor(np.random.randint(0, 4, (32,)).astype(np.int32))
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
