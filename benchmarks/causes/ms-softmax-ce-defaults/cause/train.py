import mindspore as ms
import numpy as np
from mindspore import nn


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.SequentialCell(nn.Dense(16, 32), nn.ReLU(), nn.Dense(32, 4))

    def construct(self, x):
        return self.fc(x)


def make_batch():
    x = ms.Tensor(np.random.randn(32, 16).astype(np.float32))
    labels = np.random.randint(0, 4, (32,))
    y = ms.Tensor(np.eye(4, dtype=np.float32)[labels])  # one-hot, as the loss expects by default
    return x, y


def main():
    ms.set_context(mode=ms.GRAPH_MODE, device_target="Ascend")
    ms.set_seed(0)
    net = Net()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits()
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    train_net = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), optimizer)
    train_net.set_train()
    x, y = make_batch()
    for step in range(50):
        train_net(x, y)


if __name__ == "__main__":
    main()
