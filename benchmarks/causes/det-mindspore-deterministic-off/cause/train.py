import mindspore as ms
import numpy as np
from mindspore import nn
from mindspore.communication import init


class Classifier(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(20, 64)
        self.act = nn.ReLU()
        self.fc2 = nn.Dense(64, 5)

    def construct(self, x):
        return self.fc2(self.act(self.fc1(x)))


def main():
    ms.set_context(mode=ms.GRAPH_MODE, device_target="Ascend")
    ms.set_seed(1)
    init()
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
    net = Classifier()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    train_net = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), optimizer)
    train_net.set_train()
    x = ms.Tensor(np.random.randn(32, 20).astype(np.float32))
    y = ms.Tensor(np.random.randint(0, 5, (32,)).astype(np.int32))
    for step in range(50):
        train_net(x, y)


if __name__ == "__main__":
    main()
