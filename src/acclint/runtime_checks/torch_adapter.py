"""The torch adapter: CPU, CUDA and Ascend NPU (torch_npu) through the device abstraction only.

Nothing here names a device type except in tables: per-device modules (torch.cuda, torch.npu)
are found with getattr(torch, device.type), so the NPU path is the CUDA path with another name.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from acclint.runtime_checks.environment import torch_environment
from acclint.runtime_checks.errors import FingerprintError
from acclint.runtime_checks.adapter import Adapter
from acclint.runtime_checks.fingerprint import OptimizerRecord
from acclint.runtime_checks.names import IGNORED_LEAVES, builtin_common_name, leaf
from acclint.runtime_checks.optimizers import TORCH_OPTIMIZER_TYPES, torch_style_record
from acclint.runtime_checks.records import NamedTensor, loss_value, walk_tensors
from acclint.runtime_checks.sharding import local_tensor

# Wrapper class name -> attribute holding the user's module (names are taken from the inner one).
# Megatron-LM / MindSpeed wrap their models in their own DistributedDataParallel and in Float16Module.
WRAPPER_ATTRIBUTES = {
    "DistributedDataParallel": "module",
    "DataParallel": "module",
    "OptimizedModule": "_orig_mod",
    "Float16Module": "module",
}

# Device types whose RNG is the CPU generator (or that have none).
HOST_DEVICE_TYPES = frozenset({"cpu", "meta"})


@dataclass
class TorchSnapshot:
    tensors: list[Any]
    copies: dict[int, Any]
    grads: dict[int, Any]
    optimizer_state: dict[Any, Any] | None


class TorchAdapter(Adapter):
    framework = "torch"
    model_type = "nn.Module"

    def __init__(self, model: Any, optimizer: Any = None) -> None:
        import torch

        self.torch = torch
        self.model = model
        self.module = unwrap(model)
        if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
            raise FingerprintError(
                f"a torch model needs a torch.optim.Optimizer, got {type(optimizer).__module__}.{type(optimizer).__name__}"
            )
        self.optimizer = optimizer
        self._params = self._named_params()
        self._state = self._named_state()

    # ------------------------------------------------------------------ description
    @property
    def model_class(self) -> str:
        return type(self.module).__name__

    @property
    def device(self) -> str:
        devices = sorted({str(t.device) for t in self.module.parameters()})
        return ",".join(devices) if devices else "cpu"

    def _named_params(self) -> list[NamedTensor]:
        owners = dict(self.module.named_modules())
        return [self._named(name, p, owners, p.requires_grad) for name, p in self.module.named_parameters()]

    def _named_state(self) -> list[NamedTensor]:
        # Floating-point buffers (BatchNorm running stats and the like); integer counters such as
        # num_batches_tracked have no counterpart elsewhere. state_dict gives persistent buffers only.
        owners = dict(self.module.named_modules())
        seen = {id(p) for p in self.module.parameters()}
        state = []
        for name, tensor in self.module.state_dict(keep_vars=True).items():
            if id(tensor) in seen or not self.torch.is_tensor(tensor) or not tensor.is_floating_point():
                continue
            if leaf(name) in IGNORED_LEAVES:
                continue
            seen.add(id(tensor))
            state.append(self._named(name, tensor, owners, False))
        return state

    def _named(self, name: str, tensor: Any, owners: dict[str, Any], trainable: bool) -> NamedTensor:
        owner = owners.get(name.rpartition(".")[0], self.module)
        classes = [cls.__name__ for cls in type(owner).__mro__]
        return NamedTensor(
            native_name=name,
            name=builtin_common_name(self.framework, name, classes),
            module=type(owner).__name__,
            tensor=tensor,
            trainable=bool(trainable),
            shape=tuple(tensor.shape),
            dtype=str(tensor.dtype).replace("torch.", ""),
        )

    def training(self) -> bool:
        return bool(self.model.training)

    def buffers(self) -> list[Any]:
        """Every buffer a forward pass may change, counters included (for rollback, not for records)."""
        return list({id(b): b for b in self.module.buffers()}.values())

    def all_tensors(self) -> list[Any]:
        return [item.tensor for item in self._params] + self.buffers()

    def to_host(self, tensor: Any) -> np.ndarray:
        data = local_tensor(tensor).detach()  # a DTensor: this rank's block (sharded_run assembles them)
        if data.is_floating_point() and data.dtype != self.torch.float32:
            data = data.float()  # numpy has no bfloat16; float32 holds every 16-bit value exactly
        return data.cpu().contiguous().numpy()  # no copy for contiguous CPU float32

    def environment(self) -> dict[str, Any]:
        first = next(iter(self.module.parameters()), None)
        return torch_environment(self.torch, first.device.type if first is not None else "cpu")

    # ------------------------------------------------------------------ modules, batch and forward hooks
    def modules(self) -> list[tuple[str, Any, bool]]:
        """(native path, module, is a leaf) for every module, the model itself ("") first."""
        return [(name, m, next(m.children(), None) is None) for name, m in self.module.named_modules()]

    def is_tensor(self, value: Any) -> bool:
        return self.torch.is_tensor(value)

    def dtype_name(self, tensor: Any) -> str:
        return str(tensor.dtype).replace("torch.", "")

    def readable(self, tensor: Any) -> bool:
        return not tensor.is_meta  # a meta tensor has a shape and no values

    def version(self, tensor: Any) -> Any:
        return tensor._version  # bumped by every in-place change

    def add_forward_hooks(self, module: Any, enter: Callable, leave: Callable) -> list[Any]:
        def pre(_module: Any, args: Any, kwargs: Any) -> None:
            enter(args, kwargs)

        def post(_module: Any, _args: Any, output: Any) -> None:
            leave(output)

        return [module.register_forward_pre_hook(pre, with_kwargs=True), module.register_forward_hook(post)]

    # ------------------------------------------------------------------ optimizer
    def optimizer_param_keys(self) -> list[int]:
        return [id(p) for group in self.optimizer.param_groups for p in group["params"]]

    def optimizer_record(self, names: dict[int, str]) -> OptimizerRecord:
        return torch_style_record(self.optimizer, names, TORCH_OPTIMIZER_TYPES, "torch")

    # ------------------------------------------------------------------ the step
    def forward_for_grad(self, loss_fn: Callable, batch: Any) -> tuple[float, Any]:
        for item in self._params:
            item.tensor.grad = None
        loss = self._call(loss_fn, batch)
        if not self.torch.is_tensor(loss):
            raise FingerprintError(
                f"loss_fn must return the loss tensor so capture can back-propagate, got {type(loss).__name__}"
            )
        value = loss_value(loss)
        if not loss.requires_grad:
            raise FingerprintError(
                "the loss does not require grad: no trainable parameter took part (all frozen, or computed under no_grad)"
            )
        return value, loss

    def gradients(self, loss: Any) -> dict[int, Any]:
        loss.backward()
        return {id(item.tensor): item.tensor.grad for item in self._params if item.trainable}

    def clip(self, grads: dict[int, Any], max_norm: float) -> dict[int, Any]:
        present = [item.tensor for item in self._params if item.trainable and item.tensor.grad is not None]
        self.torch.nn.utils.clip_grad_norm_(present, max_norm)
        return {id(item.tensor): item.tensor.grad for item in self._params if item.trainable}

    def optimizer_step(self, grads: dict[int, Any]) -> None:
        self.optimizer.step()  # torch reads the gradients from .grad

    def evaluate(self, loss_fn: Callable, batch: Any) -> float:
        with self.torch.no_grad():
            return loss_value(self._call(loss_fn, batch))

    def _call(self, loss_fn: Callable, batch: Any) -> Any:
        try:
            return loss_fn(self.model, batch)
        except Exception as exc:
            problem = self._device_problem(batch)
            if problem:
                raise FingerprintError(problem) from exc
            raise

    def _device_problem(self, batch: Any) -> str | None:
        model_devices = {str(p.device) for p in self.module.parameters()}
        batch_devices = {str(t.device) for t in walk_tensors(batch, self.torch.is_tensor)}
        stray = sorted(batch_devices - model_devices)
        if not stray or not model_devices:
            return None
        return (
            f"the batch is on {', '.join(stray)} but the model's parameters are on {', '.join(sorted(model_devices))}; "
            "move the batch to the model's device (or do it inside loss_fn)"
        )

    # ------------------------------------------------------------------ norms
    def norms(self, tensors: dict[int, Any]) -> dict[int, float | None]:
        vector_norm = self.torch.linalg.vector_norm
        present = {
            k: vector_norm(local_tensor(t).detach(), dtype=self.torch.float32) for k, t in tensors.items() if t is not None
        }
        values = self._floats(present)
        return {k: values.get(k) for k in tensors}

    def diff_norms(self, tensors: list[Any], snapshot: TorchSnapshot) -> dict[int, float]:
        vector_norm = self.torch.linalg.vector_norm
        with self.torch.no_grad():
            diffs = {
                id(t): vector_norm(local_tensor(t).detach().float() - local_tensor(snapshot.copies[id(t)]).float())
                for t in tensors
            }
        return self._floats(diffs)

    def _floats(self, scalars: dict[int, Any]) -> dict[int, float]:
        # One device-to-host transfer per device instead of one synchronisation per tensor.
        by_device: dict[Any, list[int]] = {}
        for key, value in scalars.items():
            by_device.setdefault(value.device, []).append(key)
        result = {}
        for keys in by_device.values():
            values = self.torch.stack([scalars[k] for k in keys]).cpu().tolist()
            result.update(zip(keys, values))
        return result

    # ------------------------------------------------------------------ snapshots and RNG
    def snapshot(self, tensors: list[Any], with_optimizer: bool) -> TorchSnapshot:
        with self.torch.no_grad():
            copies = {id(t): t.detach().clone() for t in tensors}
        grads = {id(t): t.grad for t in tensors if isinstance(t, self.torch.nn.Parameter)}
        optimizer_state = None
        if with_optimizer and self.optimizer is not None:
            optimizer_state = {param: copy.deepcopy(state) for param, state in self.optimizer.state.items()}
        return TorchSnapshot(list(tensors), copies, grads, optimizer_state)

    def restore(self, snapshot: TorchSnapshot) -> None:
        with self.torch.no_grad():
            for tensor in snapshot.tensors:
                tensor.copy_(snapshot.copies[id(tensor)])
        for tensor in snapshot.tensors:
            if id(tensor) in snapshot.grads:
                tensor.grad = snapshot.grads[id(tensor)]
        if snapshot.optimizer_state is not None:
            self.optimizer.state.clear()
            self.optimizer.state.update(snapshot.optimizer_state)

    def _accelerators(self) -> list[Any]:
        devices = {p.device for p in self.module.parameters() if p.device.type not in HOST_DEVICE_TYPES}
        return sorted(devices, key=str)

    def rng_state(self) -> dict[str, Any]:
        state = {"cpu": self.torch.get_rng_state()}
        for device in self._accelerators():
            backend = getattr(self.torch, device.type, None)  # torch.cuda, torch.npu, ...
            if backend is not None and hasattr(backend, "get_rng_state"):
                state[str(device)] = (backend, device, backend.get_rng_state(device))
        return state

    def set_rng_state(self, state: dict[str, Any]) -> None:
        self.torch.set_rng_state(state["cpu"])
        for key, value in state.items():
            if key != "cpu":
                backend, device, device_state = value
                backend.set_rng_state(device_state, device)

    # ------------------------------------------------------------------ probe and transfer
    def grad_order(self) -> list[int]:
        return [id(item.tensor) for item in self._params if item.trainable]

    def current_grads(self) -> dict[int, Any]:
        # Megatron-style loops keep the fp32 gradient in main_grad; plain loops in .grad.
        grads = {}
        for item in self._params:
            if item.trainable:
                main_grad = getattr(item.tensor, "main_grad", None)
                grads[id(item.tensor)] = main_grad if main_grad is not None else item.tensor.grad
        return grads

    def write(self, tensor: Any, array: np.ndarray) -> None:
        source = self.torch.from_numpy(np.ascontiguousarray(array)).reshape(tensor.shape)
        with self.torch.no_grad():
            tensor.copy_(source)  # copy_ casts dtype and moves to the tensor's device


def unwrap(model: Any) -> Any:
    """The user's module inside DDP / DataParallel / torch.compile wrappers."""
    while type(model).__name__ in WRAPPER_ATTRIBUTES and hasattr(model, WRAPPER_ATTRIBUTES[type(model).__name__]):
        model = getattr(model, WRAPPER_ATTRIBUTES[type(model).__name__])
    return model
