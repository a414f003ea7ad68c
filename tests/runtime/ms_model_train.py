"""A MindSpore program, unmodified, for `acclint capture` (written for this suite): trained with
Model.train, or (argument "loop") with a loop of its own around nn.TrainOneStepCell; in PyNative
mode, or (third argument "graph") in GRAPH mode; with a fourth argument "decay", the lr halves from
step 2 on (a per-step lr list).

    python ms_model_train.py LR [model|loop] [pynative|graph] [decay]
"""

import sys

import mindspore as ms
import numpy as np
from mindspore import nn

lr = float(sys.argv[1]) if len(sys.argv) > 1 else 0.01
own_loop = len(sys.argv) > 2 and sys.argv[2] == "loop"
if len(sys.argv) > 3 and sys.argv[3] == "graph":
    ms.set_context(mode=ms.GRAPH_MODE)  # mindcv's default
ms.set_seed(0)
net = nn.SequentialCell([nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 1)])
data = np.random.default_rng(0).standard_normal((32, 9)).astype(np.float32)
dataset = ms.dataset.NumpySlicesDataset((data[:, :8], data[:, 8:]), column_names=["x", "y"], shuffle=False).batch(8)
decay = len(sys.argv) > 4 and sys.argv[4] == "decay"
optimizer = nn.Adam(net.trainable_params(), learning_rate=[lr, lr] + [lr / 2] * 6 if decay else lr)
if own_loop:
    net.set_train()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), optimizer)
    for epoch in range(2):
        for x, y in dataset.create_tuple_iterator():
            step(x, y)
else:
    model = ms.train.Model(net, loss_fn=nn.MSELoss(), optimizer=optimizer)
    model.train(2, dataset, dataset_sink_mode=False)
print("trained to the end", flush=True)
