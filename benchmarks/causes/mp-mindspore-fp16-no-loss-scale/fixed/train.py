import mindspore as ms
import numpy as np
from mindspore import nn


def main():
    ms.set_context(mode=ms.GRAPH_MODE, device_target="Ascend")
    ms.set_seed(0)
    net = nn.SequentialCell(nn.Dense(32, 64), nn.ReLU(), nn.Dense(64, 10))
    net.to_float(ms.float16)
    loss_net = nn.WithLossCell(net, nn.CrossEntropyLoss())
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    scale_update = nn.DynamicLossScaleUpdateCell(loss_scale_value=2**12, scale_factor=2, scale_window=1000)
    train_net = nn.TrainOneStepWithLossScaleCell(loss_net, optimizer, scale_sense=scale_update)
    train_net.set_train()
    x = ms.Tensor(np.random.randn(64, 32).astype(np.float32))
    y = ms.Tensor(np.random.randint(0, 10, (64,)).astype(np.int32))
    for step in range(100):
        train_net(x, y)


if __name__ == "__main__":
    main()
