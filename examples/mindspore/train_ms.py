"""The same classifier rewritten in MindSpore, trained on Ascend."""

import mindspore as ms
import numpy as np
from mindspore import nn


class ConvNet(nn.Cell):
    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, pad_mode="pad", padding=1, has_bias=True)
        self.conv2 = nn.Conv2d(32, 64, 3, pad_mode="pad", padding=1, has_bias=True)
        self.pool = nn.MaxPool2d(2, 2)
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        self.head = nn.Dense(64 * 8 * 8, num_classes)

    def construct(self, x):
        x = self.pool(self.relu(self.conv1(x)))
        x = self.pool(self.relu(self.conv2(x)))
        return self.head(self.flatten(x))


def main() -> None:
    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="Ascend")
    ms.set_seed(1234)
    net = ConvNet()
    net.set_train()
    optimizer = nn.AdamWeightDecay(net.trainable_params(), learning_rate=1e-3, weight_decay=0.1)
    loss_fn = nn.CrossEntropyLoss()

    def forward(images, labels):
        return loss_fn(net(images), labels)

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)
    for step in range(16):
        images = ms.Tensor(np.random.randn(32, 3, 32, 32).astype(np.float32))
        labels = ms.Tensor(np.random.randint(0, 10, (32,)).astype(np.int32))
        loss, grads = grad_fn(images, labels)
        optimizer(grads)
        if step % 10 == 0:
            print(f"step {step} loss {loss.asnumpy():.6f}")


if __name__ == "__main__":
    main()
