import mindspore as ms
import numpy as np
from mindspore import nn
from mindspore.common.initializer import Normal


class Net(nn.Cell):
    """Port of a PyTorch bag-of-words classifier (nn.Embedding: N(0, 1) init)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(1000, 32, embedding_table=Normal(sigma=1.0))
        self.fc = nn.Dense(32, 4)

    def construct(self, tokens):
        return self.fc(self.embed(tokens).mean(1))


def make_batch():
    x = ms.Tensor(np.random.randint(0, 1000, (8, 24)).astype(np.int32))
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
