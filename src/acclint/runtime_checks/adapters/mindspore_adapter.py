"""The MindSpore adapter: nn.Cell + nn.Optimizer (or mindspore.experimental.optim), PyNative mode.

MindSpore keeps running statistics as Parameters with requires_grad=False and has no .grad:
the step uses mindspore.value_and_grad over the optimizer's parameters, as its own tutorials do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from acclint.runtime_checks.adapters.environment import mindspore_environment
from acclint.runtime_checks.model.errors import FingerprintError
from acclint.runtime_checks.adapters.adapter import Adapter
from acclint.runtime_checks.model.fingerprint import OptimizerRecord
from acclint.runtime_checks.adapters.mindspore_parallel import data_parallel_reducer
from acclint.runtime_checks.adapters.offload import HostStore, aligned
from acclint.runtime_checks.model.names import STATE_LEAVES, builtin_common_name, leaf
from acclint.runtime_checks.model.schedules import cell_schedule
from acclint.runtime_checks.model.optimizers import (
    MINDSPORE_ATTRIBUTE_NAMES,
    MINDSPORE_EXPERIMENTAL_TYPES,
    MINDSPORE_OPTIMIZER_TYPES,
    eps_name,
    group_params_by_hparams,
    plain_value,
    torch_style_record,
)
from acclint.runtime_checks.adapters.records import NamedTensor, l2_norm, loss_value

# Host-side dtypes numpy cannot hold; they are widened to float32 (exactly) before hashing.
NARROW_FLOAT_DTYPES = frozenset({"bfloat16"})


@dataclass
class MindSporeSnapshot:
    """Host copies (in `store`) of Parameters, for restore()."""

    parameters: list[Any]
    copies: dict[int, np.ndarray]  # id(parameter) -> host array (float32 for narrow float dtypes)
    store: HostStore

    def release(self) -> None:
        self.copies.clear()
        self.store.release()


class MindSporeAdapter(Adapter):
    framework = "mindspore"
    model_type = "nn.Cell"

    def __init__(self, model: Any, optimizer: Any = None) -> None:
        import mindspore

        self.ms = mindspore
        self.model = model
        self.module = model
        if optimizer is not None and not isinstance(optimizer, mindspore.nn.Cell):
            raise FingerprintError(
                "a MindSpore model needs a mindspore optimizer (nn.Optimizer or mindspore.experimental.optim), "
                f"got {type(optimizer).__module__}.{type(optimizer).__name__}"
            )
        self.optimizer = optimizer
        self._params, self._state = self._named_tensors()

    # ------------------------------------------------------------------ description
    @property
    def model_class(self) -> str:
        return type(self.model).__name__

    @property
    def device(self) -> str:
        target = str(self.ms.get_context("device_target")).lower()
        return target if target == "cpu" else f"{target}:{self.ms.get_context('device_id')}"

    def _named_tensors(self) -> tuple[list[NamedTensor], list[NamedTensor]]:
        owners = dict(self.model.cells_and_names())
        params, state = [], []
        for name, parameter in self.model.parameters_and_names():
            owner = owners.get(name.rpartition(".")[0], self.model)
            classes = [cls.__name__ for cls in type(owner).__mro__]
            common = builtin_common_name(self.framework, name, classes)
            # Moving statistics are Parameters here but buffers in torch: state on both sides.
            is_state = not parameter.requires_grad and leaf(common) in STATE_LEAVES
            item = NamedTensor(
                native_name=name,
                name=common,
                module=type(owner).__name__,
                tensor=parameter,
                trainable=bool(parameter.requires_grad) and not is_state,
                shape=tuple(parameter.shape),
                dtype=str(parameter.dtype).lower(),
            )
            (state if is_state else params).append(item)
        return params, state

    def training(self) -> bool:
        return bool(self.model.training)

    def buffers(self) -> list[Any]:
        """Parameters a forward pass may change (moving statistics and other non-trainable ones)."""
        return [p for p in self.model.get_parameters() if not p.requires_grad]

    def all_tensors(self) -> list[Any]:
        return list(self.model.get_parameters())

    def to_host(self, tensor: Any) -> np.ndarray:
        if str(tensor.dtype).lower() in NARROW_FLOAT_DTYPES:
            tensor = tensor.astype(self.ms.float32)
        return tensor.asnumpy()

    def environment(self) -> dict[str, Any]:
        return mindspore_environment(self.ms)

    # ------------------------------------------------------------------ modules, batch and forward hooks
    def modules(self) -> list[tuple[str, Any, bool]]:
        """(native path, cell, is a leaf) for every cell, the model itself ("") first."""
        return [(name, cell, not cell.name_cells()) for name, cell in self.model.cells_and_names()]

    def is_tensor(self, value: Any) -> bool:
        return isinstance(value, self.ms.Tensor)

    def dtype_name(self, tensor: Any) -> str:
        return str(tensor.dtype).lower()

    def version(self, tensor: Any) -> Any:
        return None  # no version counter: a tensor is summarised when first seen

    def forward_hooks_unavailable(self) -> str | None:
        """Why Cell forward hooks cannot record here (None: they can)."""
        if not hasattr(self.ms.nn.Cell, "register_forward_pre_hook"):
            return f"MindSpore {self.ms.__version__} has no Cell forward hooks"
        if self.ms.get_context("mode") != self.ms.PYNATIVE_MODE:
            return "Cell forward hooks run in PyNative mode only"
        return None

    def add_forward_hooks(self, cell: Any, enter: Callable, leave: Callable) -> list[Any]:
        # The first argument is the cell (MindSpore >= 2.3) or its id (older): not used.
        def pre(_cell: Any, args: Any) -> None:
            enter(args, {})

        def post(_cell: Any, _args: Any, output: Any) -> None:
            leave(output)

        return [cell.register_forward_pre_hook(pre), cell.register_forward_hook(post)]

    # ------------------------------------------------------------------ optimizer
    def optimizer_param_keys(self) -> list[int]:
        return [id(p) for p in self._weights()]

    def optimizer_record(self, names: dict[int, str]) -> OptimizerRecord:
        if hasattr(self.optimizer, "param_groups"):  # mindspore.experimental.optim mirrors torch.optim
            return torch_style_record(self.optimizer, names, MINDSPORE_EXPERIMENTAL_TYPES, "mindspore")
        return self._nn_optimizer_record(names)

    def _nn_optimizer_record(self, names: dict[int, str]) -> OptimizerRecord:
        # nn.* optimizers keep lr and weight decay per parameter and the rest as attributes;
        # groups are rebuilt as "parameters with equal settings".
        optimizer = self.optimizer
        cls = type(optimizer)
        optimizer_type = MINDSPORE_OPTIMIZER_TYPES.get(cls.__name__, f"mindspore:{cls.__name__}")
        shared = {}
        for attribute, name in MINDSPORE_ATTRIBUTE_NAMES.items():
            value = getattr(optimizer, attribute, None)
            if value is None or callable(value) and not hasattr(value, "asnumpy"):
                continue
            shared[eps_name(optimizer_type) if name == "eps" else name] = plain_value(value)
        parameters = list(optimizer.parameters)
        peak, schedule = cell_schedule(optimizer)
        if peak is not None:
            shared["peak-lr"] = peak
        lrs = _per_parameter(optimizer.get_lr(), len(parameters))
        weight_decays = _per_parameter(optimizer.get_weight_decay(), len(parameters))
        per_param = [
            (names[id(p)], {"lr": lr, "weight-decay": wd, **shared})
            for p, lr, wd in zip(parameters, lrs, weight_decays)
            if id(p) in names
        ]
        return OptimizerRecord(
            type=optimizer_type,
            native_type=f"{cls.__module__}.{cls.__qualname__}",
            groups=group_params_by_hparams(per_param),
            extra=schedule,
        )

    # ------------------------------------------------------------------ the step
    def forward_for_grad(self, loss_fn: Callable, batch: Any) -> tuple[float, Any]:
        weights = tuple(self._weights())
        grad_fn = self.ms.value_and_grad(lambda: loss_fn(self.model, batch), None, weights)
        try:
            loss, grads = grad_fn()
        except Exception:
            self._clear_grad_state()
            raise
        if not isinstance(loss, self.ms.Tensor):
            raise FingerprintError(f"loss_fn must return the loss as a mindspore Tensor, got {type(loss).__name__}")
        return loss_value(loss), dict(zip(self.optimizer_param_keys(), grads))

    def _clear_grad_state(self) -> None:
        # PyNative keeps the half-built graph of a forward that raised inside value_and_grad, and
        # every later value_and_grad in the process then fails (MindSpore 2.10, hooks or not).
        # MindSpore clears it the same way when its own compilation raises.
        import importlib

        executor = getattr(importlib.import_module("mindspore.common.api"), "_pynative_executor", None)
        if executor is not None and hasattr(executor, "clear_res"):
            executor.clear_res()

    def _weights(self) -> list[Any]:
        if hasattr(self.optimizer, "param_groups"):
            return [p for group in self.optimizer.param_groups for p in group["params"]]
        return list(self.optimizer.parameters)

    def gradients(self, grads: dict[int, Any]) -> dict[int, Any]:
        # value_and_grad already produced them; a data-parallel job averages them over the ranks.
        reduce = data_parallel_reducer(self.ms, self._weights())
        return grads if reduce is None else dict(zip(grads.keys(), reduce(tuple(grads.values()))))

    def clip(self, grads: dict[int, Any], max_norm: float) -> dict[int, Any]:
        clipped = self.ms.ops.clip_by_global_norm(tuple(grads.values()), max_norm)
        return dict(zip(grads.keys(), clipped))

    def optimizer_step(self, grads: dict[int, Any]) -> None:
        self.optimizer(tuple(grads[key] for key in self.optimizer_param_keys()))

    def evaluate(self, loss_fn: Callable, batch: Any) -> float:
        return loss_value(loss_fn(self.model, batch))

    # ------------------------------------------------------------------ norms
    def norms(self, tensors: dict[int, Any]) -> dict[int, float | None]:
        return {key: None if t is None else l2_norm(self.to_host(t)) for key, t in tensors.items()}

    def diff_norms(self, tensors: list[Any], snapshot: MindSporeSnapshot, write_back: bool = False) -> dict[int, float]:
        # write_back is an optimisation the torch adapter takes; here restore() puts everything back
        return {id(t): l2_norm(self.to_host(t) - snapshot.copies[id(t)]) for t in tensors}

    # ------------------------------------------------------------------ snapshots and RNG
    def snapshot(
        self, tensors: list[Any], with_optimizer: bool, offload: str = "host", directory: "str | None" = None
    ) -> MindSporeSnapshot:
        """Host (or memory-mapped file) copies, one Parameter at a time. The optimizer is a Cell:
        its moments, step counter, beta powers and lr are Parameters too."""
        parameters = {id(p): p for p in tensors}
        if with_optimizer and self.optimizer is not None:
            parameters.update((id(p), p) for _, p in self.optimizer.parameters_and_names())
        layout = {key: (tuple(p.shape), self._host_dtype(p)) for key, p in parameters.items()}
        store = HostStore(sum(aligned(int(np.prod(shape)) * dtype.itemsize) for shape, dtype in layout.values()),
                          offload, directory)
        copies = {}
        for key, parameter in parameters.items():
            copies[key] = store.array(*layout[key])
            copies[key][...] = self.to_host(parameter)
        return MindSporeSnapshot(list(parameters.values()), copies, store)

    def _host_dtype(self, parameter: Any) -> np.dtype:
        if str(parameter.dtype).lower() in NARROW_FLOAT_DTYPES:
            return np.dtype(np.float32)  # holds every bfloat16 value exactly
        # MindSpore's dtypes print as numpy's names ("Float32", "Int64", "Bool"); dtype_to_nptype
        # says so too but is deprecated since MindSpore 2.7 (a logged warning per parameter).
        return np.dtype(str(parameter.dtype).lower())

    def restore(self, snapshot: MindSporeSnapshot) -> None:
        # In place: Parameter.set_data swaps the storage, and an optimizer that has already run
        # keeps updating the old one (its later steps then silently do nothing). The Tensor gets
        # its own copy of the host array: the store is released below.
        for parameter in snapshot.parameters:
            saved = np.array(snapshot.copies[id(parameter)])
            self.ms.ops.assign(parameter, self.ms.Tensor(saved, dtype=parameter.dtype))
        snapshot.release()

    def rng_state(self) -> Any:
        return self.ms.get_rng_state()

    def set_rng_state(self, state: Any) -> None:
        self.ms.set_rng_state(state)

    # ------------------------------------------------------------------ probe and transfer
    def grad_order(self) -> list[int]:
        if self.optimizer is not None:
            return self.optimizer_param_keys()
        return [id(item.tensor) for item in self._params if item.trainable]

    def current_grads(self) -> dict[int, Any]:
        return {}  # MindSpore keeps no gradients on the parameters: pass them to Probe.record

    def write(self, tensor: Any, array: np.ndarray) -> None:
        data = np.ascontiguousarray(array).reshape(tuple(tensor.shape))
        self.ms.ops.assign(tensor, self.ms.Tensor(data, dtype=tensor.dtype))  # in place, see restore()


def _per_parameter(value: Any, count: int) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return [plain_value(item) for item in value]
    return [plain_value(value)] * count
