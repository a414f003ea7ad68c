"""Shared fixtures for the runtime checks: real torch and real MindSpore, small models.

torch and MindSpore are optional extras of the package but real dependencies of these tests.
Outside CI a missing framework skips the tests that need it; in CI (CI=true) it must fail,
so `require` imports directly and lets the ImportError fail the test.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest

from acclint.runtime_checks.model.fingerprint import (
    Fingerprint,
    OptimizerGroup,
    OptimizerRecord,
    StepRecord,
    TensorRecord,
)

IN_FEATURES, OUT_FEATURES, BATCH = 8, 4, 32


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes", "on"}


def require(module_name: str) -> Any:
    """The module; outside CI skip when it is missing, in CI fail (never skip)."""
    if in_ci():
        return importlib.import_module(module_name)
    return pytest.importorskip(module_name)


@pytest.fixture(scope="session")
def torch() -> Any:
    return require("torch")


@pytest.fixture(scope="session")
def ms() -> Any:
    mindspore = require("mindspore")
    mindspore.set_context(mode=mindspore.PYNATIVE_MODE)  # global; every MindSpore test here runs PyNative
    return mindspore


@pytest.fixture(scope="session")
def data() -> tuple[np.ndarray, np.ndarray]:
    """One batch as numpy, fed identically to both frameworks."""
    rng = np.random.default_rng(1234)
    x = rng.standard_normal((BATCH, IN_FEATURES)).astype(np.float32)
    y = rng.standard_normal((BATCH, OUT_FEATURES)).astype(np.float32)
    return x, y


# ---------------------------------------------------------------------------- torch side
@dataclass
class Setup:
    model: Any
    optimizer: Any
    loss_fn: Callable[[Any, Any], Any]
    batch: Any

    def train(self, steps: int) -> list[float]:
        """`steps` plain torch training steps on the batch; their losses."""
        losses = []
        for _ in range(steps):
            self.optimizer.zero_grad()
            loss = self.loss_fn(self.model, self.batch)
            loss.backward()
            self.optimizer.step()
            losses.append(loss.item())
        return losses


def torch_net(torch: Any, width: int = 16, extra_layer: bool = False, dropout: float = 0.0) -> Any:
    """Linear -> LayerNorm -> Linear -> BatchNorm -> (extra Linear) -> head."""
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(IN_FEATURES, width)
            self.ln = nn.LayerNorm(width)
            self.fc2 = nn.Linear(width, width)
            self.bn = nn.BatchNorm1d(width)
            self.extra = nn.Linear(width, width) if extra_layer else None
            self.drop = nn.Dropout(dropout)
            self.head = nn.Linear(width, OUT_FEATURES)

        def forward(self, x: Any) -> Any:
            h = torch.relu(self.ln(self.fc1(x)))
            h = torch.relu(self.bn(self.fc2(h)))
            if self.extra is not None:
                h = torch.relu(self.extra(h))
            return self.head(self.drop(h))

    return Net()


def split_decay(named_params: list[tuple[str, Any]]) -> tuple[list[Any], list[Any]]:
    """Megatron-style groups: weight decay on matrices only."""
    decay = [p for n, p in named_params if n.endswith("weight") and len(p.shape) > 1]
    no_decay = [p for n, p in named_params if not (n.endswith("weight") and len(p.shape) > 1)]
    return decay, no_decay


def torch_setup(
    torch: Any,
    data: tuple[np.ndarray, np.ndarray],
    *,
    seed: int = 0,
    width: int = 16,
    extra_layer: bool = False,
    dropout: float = 0.0,
    optimizer: str = "adam",
    lr: float = 1e-3,
    betas: tuple[float, float] = (0.9, 0.999),
    weight_decay: float = 0.0,
    groups: bool = False,
    freeze: tuple[str, ...] = (),
    train: bool = True,
) -> Setup:
    torch.manual_seed(seed)
    model = torch_net(torch, width, extra_layer, dropout)
    for name, parameter in model.named_parameters():
        if name in freeze:
            parameter.requires_grad_(False)
    model.train(train)
    if groups:
        decay, no_decay = split_decay(list(model.named_parameters()))
        params: Any = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    else:
        params = model.parameters()
    optimizers = {
        "adam": lambda: torch.optim.Adam(params, lr=lr, betas=betas, weight_decay=weight_decay),
        "adamw": lambda: torch.optim.AdamW(params, lr=lr, betas=betas, weight_decay=weight_decay),
        "sgd": lambda: torch.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=weight_decay),
    }
    x, y = data

    def loss_fn(model: Any, batch: Any) -> Any:
        inputs, targets = batch
        return torch.nn.functional.mse_loss(model(inputs), targets)

    return Setup(model, optimizers[optimizer](), loss_fn, (torch.from_numpy(x.copy()), torch.from_numpy(y.copy())))


# ---------------------------------------------------------------------------- MindSpore side
def ms_net(ms: Any, width: int = 16, extra_layer: bool = False) -> Any:
    """The same network as torch_net, with MindSpore's defaults matched to torch's."""
    nn, ops = ms.nn, ms.ops

    class Net(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Dense(IN_FEATURES, width)
            self.ln = nn.LayerNorm((width,), epsilon=1e-5)  # MindSpore's default epsilon is 1e-7
            self.fc2 = nn.Dense(width, width)
            self.bn = nn.BatchNorm1d(width, momentum=0.9)  # = torch momentum 0.1
            self.extra = nn.Dense(width, width) if extra_layer else None
            self.head = nn.Dense(width, OUT_FEATURES)

        def construct(self, x: Any) -> Any:
            h = ops.relu(self.ln(self.fc1(x)))
            h = ops.relu(self.bn(self.fc2(h)))
            if self.extra is not None:
                h = ops.relu(self.extra(h))
            return self.head(h)

    return Net()


def ms_setup(
    ms: Any,
    data: tuple[np.ndarray, np.ndarray],
    *,
    model: Any = None,
    optimizer: str = "adam",
    lr: float = 1e-3,
    weight_decay: float = 0.0,
    eps: float | None = None,
    groups: bool = False,
    freeze: tuple[str, ...] = (),
    train: bool = True,
) -> Setup:
    nn = ms.nn
    model = model if model is not None else ms_net(ms)
    for name, parameter in model.parameters_and_names():
        if name in freeze:
            parameter.requires_grad = False
    if train:
        model.set_train()
    trainable = model.trainable_params()
    if groups:
        named = [(p.name, p) for p in trainable]
        decay, no_decay = split_decay(named)
        params: Any = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    else:
        params = trainable
    extra = {} if eps is None else {"eps": eps}
    optimizers = {
        "adam": lambda: nn.Adam(params, learning_rate=lr, weight_decay=weight_decay, **extra),
        "adamweightdecay": lambda: nn.AdamWeightDecay(params, learning_rate=lr, weight_decay=weight_decay, **extra),
        "momentum": lambda: nn.Momentum(params, learning_rate=lr, momentum=0.9, weight_decay=weight_decay),
    }
    x, y = data

    def loss_fn(model: Any, batch: Any) -> Any:
        inputs, targets = batch
        return ms.ops.mse_loss(model(inputs), targets)

    return Setup(model, optimizers[optimizer](), loss_fn, (ms.Tensor(x), ms.Tensor(y)))


# ---------------------------------------------------------------------------- hand-made fingerprints
def tiny_fingerprint(loss: float = 0.5, loss_after: float = 0.4, lr: float = 0.01) -> Fingerprint:
    """A framework-free fingerprint for file-format and CLI tests."""
    weight = TensorRecord(
        name="fc.weight", native_name="fc.weight", module="Linear", shape=[2, 3], dtype="float32", trainable=True,
        numel=6, stats={"mean": 0.1, "std": 0.2, "min": -0.3, "max": 0.4, "norm": 0.5}, sha256="ab" * 32,
    )
    stat = TensorRecord(
        name="bn.running_mean", native_name="bn.running_mean", module="BatchNorm1d", shape=[2], dtype="float32",
        trainable=False, numel=2, stats={"mean": 0.0, "std": 0.0, "min": 0.0, "max": 0.0, "norm": 0.0}, sha256="cd" * 32,
    )
    return Fingerprint(
        framework="torch",
        source="capture",
        model="Net",
        device="cpu",
        training=True,
        params=[weight],
        state=[stat],
        optimizer=OptimizerRecord(
            type="adam", native_type="torch.optim.adam.Adam",
            groups=[OptimizerGroup(hparams={"lr": lr, "adam-beta1": 0.9, "adam-beta2": 0.999}, params=["fc.weight"])],
        ),
        step=StepRecord(
            loss=loss, grad_norm=1.0, grad_norms={"fc.weight": 1.0}, loss_after_step=loss_after,
            after_step_batch="same", update_norms={"fc.weight": 0.01}, step_kept=False,
        ),
        env={"versions": {"torch": "0.0"}, "effective": {"deterministic": False}, "seed": 0},
    )


@pytest.fixture
def make_torch(torch: Any, data: tuple[np.ndarray, np.ndarray]) -> Callable[..., Setup]:
    return lambda **options: torch_setup(torch, data, **options)


@pytest.fixture
def make_ms(ms: Any, data: tuple[np.ndarray, np.ndarray]) -> Callable[..., Setup]:
    return lambda **options: ms_setup(ms, data, **options)


@pytest.fixture
def make_fingerprint() -> Callable[..., Fingerprint]:
    return tiny_fingerprint


@pytest.fixture
def build_torch_net(torch: Any) -> Callable[..., Any]:
    return lambda **options: torch_net(torch, **options)


@pytest.fixture
def build_ms_net(ms: Any) -> Callable[..., Any]:
    return lambda **options: ms_net(ms, **options)
