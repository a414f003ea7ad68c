"""One rank of the MindSpore data-parallel job in test_runtime_mindspore_distributed.py (run by msrun).

usage: msrun --worker_num=2 --local_worker_num=2 ... ms_dp_worker.py OUT_DIR
Every rank builds the same network (weights from a fixed numpy stream), takes its half of the
batch, and records it twice: with capture (which averages the gradients over the ranks as the
DATA_PARALLEL context asks) and with the Probe around a loop that reduces them itself. Each rank
writes its own files (ms-capture.rank<N>.json, ms-probe.rank<N>.json).
"""

from __future__ import annotations

import sys
from pathlib import Path

import mindspore as ms
import numpy as np
from mindspore.communication import get_group_size, get_rank, init

from acclint.runtime import Probe, capture

IN, HIDDEN, OUT, BATCH = 8, 16, 4, 12


def network() -> ms.nn.Cell:
    class Net(ms.nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = ms.nn.Dense(IN, HIDDEN)
            self.fc2 = ms.nn.Dense(HIDDEN, OUT)
            self.ln = ms.nn.LayerNorm((OUT,), epsilon=1e-5)

        def construct(self, x: ms.Tensor) -> ms.Tensor:
            return self.ln(self.fc2(ms.ops.relu(self.fc1(x))))

    net = Net()
    rng = np.random.default_rng(0)
    for _, parameter in sorted(net.parameters_and_names()):
        values = rng.standard_normal(tuple(parameter.shape)).astype(np.float32) * 0.3
        parameter.set_data(ms.Tensor(values))
    return net


def data(seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((BATCH, IN)).astype(np.float32), rng.standard_normal((BATCH, OUT)).astype(np.float32)


def shard(arrays: tuple[np.ndarray, ...], rank: int, size: int) -> tuple[ms.Tensor, ...]:
    return tuple(ms.Tensor(np.array_split(a, size)[rank]) for a in arrays)


def loss_fn(net: ms.nn.Cell, batch: tuple) -> ms.Tensor:
    return ms.ops.mse_loss(net(batch[0]), batch[1])


def main() -> None:
    out = Path(sys.argv[1])
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")
    init()
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
    rank, size = get_rank(), get_group_size()

    net = network()
    optimizer = ms.nn.Adam(net.trainable_params(), learning_rate=1e-3)
    capture(net, optimizer, loss_fn, shard(data(), rank, size)).save(out / "ms-capture.json")

    net = network()
    optimizer = ms.nn.Adam(net.trainable_params(), learning_rate=1e-3)
    reducer = ms.nn.DistributedGradReducer(optimizer.parameters, mean=True, degree=size)
    grad_fn = ms.value_and_grad(lambda x, y: ms.ops.mse_loss(net(x), y), None, optimizer.parameters)
    probe = Probe(net, optimizer)
    for step, seed in enumerate((7, 8)):
        batch = shard(data(seed), rank, size)
        loss, grads = grad_fn(*batch)
        grads = reducer(grads)
        optimizer(grads)
        probe.record(step, loss, grads=grads if step == 0 else None)
    probe.save(out / "ms-probe.json")


if __name__ == "__main__":
    main()
