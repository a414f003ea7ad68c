"""The torch adapter: CPU, CUDA and Ascend NPU (torch_npu) through the device abstraction only.

Nothing here names a device type except in tables: per-device modules (torch.cuda, torch.npu)
are found with getattr(torch, device.type), so the NPU path is the CUDA path with another name.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from acclint.runtime_checks.adapters.environment import torch_environment
from acclint.runtime_checks.model.errors import FingerprintError
from acclint.runtime_checks.adapters.adapter import Adapter
from acclint.runtime_checks.model.fingerprint import OptimizerRecord
from acclint.runtime_checks.model.names import IGNORED_LEAVES, builtin_common_name, leaf
from acclint.runtime_checks.adapters.offload import HostStore, aligned
from acclint.runtime_checks.model.optimizers import TORCH_OPTIMIZER_TYPES, torch_style_record
from acclint.runtime_checks.adapters.records import NamedTensor, loss_value, summarize_many, walk_tensors
from acclint.runtime_checks.model.sharding import local_tensor
from acclint.runtime_checks.adapters.torch_summary import PIECE_WORDS, run_pieces, summaries

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


# Elements per piece when measuring an update against the host copy: the device holds one
# piece of the copy at a time (4 MiB in float32), never a whole tensor.
DIFF_PIECE = 2 * PIECE_WORDS  # float32 elements: one scratch buffer of torch_summary


@dataclass
class TorchSnapshot:
    """Host copies (in `store`) of tensors, their gradients and the optimizer state, for restore()."""

    tensors: list[Any]
    copies: dict[int, Any]  # id(tensor) -> CPU tensor in the store
    grads: dict[int, Any]  # id(parameter) -> CPU copy of the gradient it had, or None
    optimizer_state: dict[Any, dict[Any, Any]] | None  # tensors as _Saved
    store: HostStore
    written_back: set[int] = field(default_factory=set)  # ids diff_norms already restored

    def release(self) -> None:
        self.copies.clear()
        self.grads.clear()
        self.optimizer_state = None
        self.store.release()


@dataclass
class _Saved:
    """An optimizer-state tensor: its host copy and the device it came from."""

    host: Any
    device: Any


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

    def summary_input(self, tensor: Any) -> Any:
        return local_tensor(tensor).detach()  # summarised on its device (torch_summary), not copied

    def summarize_many(self, tensors: list[Any]) -> list[Any]:
        return summarize_many([self.summary_input(t) for t in tensors])  # one transfer for all

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

        torch = self.torch
        return [module.register_forward_pre_hook(outside_compile(torch, pre), with_kwargs=True),
                module.register_forward_hook(outside_compile(torch, post))]

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
        values = norms(self.torch, {k: t for k, t in tensors.items() if t is not None})
        return {k: values.get(k) for k in tensors}

    def diff_norms(self, tensors: list[Any], snapshot: TorchSnapshot, write_back: bool = False) -> dict[int, float]:
        """||tensor - its snapshot copy|| for each, piece by piece against the host copy: the device
        holds one piece of the copy at a time. `write_back` also restores each piece once measured
        (restore() then skips those tensors), which saves a second pass over the weights."""
        torch = self.torch
        flat = []
        for t in tensors:
            local = local_tensor(t).detach()
            live = local.reshape(-1)
            in_place = write_back and live.data_ptr() == local.data_ptr() and local.is_contiguous()
            flat.append((live, snapshot.copies[id(t)].reshape(-1), in_place))
        tasks = [(i, start) for i, (live, _, _) in enumerate(flat) for start in range(0, live.numel(), DIFF_PIECE)]

        def square(task: tuple[int, int]) -> Any:
            live, saved, in_place = flat[task[0]]
            window = slice(task[1], task[1] + DIFF_PIECE)
            current = live[window].float()
            scratch = summaries(torch).scratch(current.device)[0].view(torch.float32)[: current.numel()]
            piece = torch.sub(current, saved[window].to(live.device).float(), out=scratch)
            result = torch.dot(piece, piece).to(torch.float64)
            if in_place:
                live[window].copy_(saved[window])
            return result

        on_cpu = all(live.device.type == "cpu" for live, _, _ in flat)
        with torch.no_grad():
            results = run_pieces(torch, tasks, square, on_cpu, sum(live.numel() for live, _, _ in flat))
            pieces: dict[int, list[Any]] = {}
            for (index, _), result in zip(tasks, results):
                pieces.setdefault(index, []).append(result)
            squares = {id(t): torch.stack(pieces[i]).sum() for i, t in enumerate(tensors) if i in pieces}
        snapshot.written_back.update(id(t) for t, (_, _, in_place) in zip(tensors, flat) if in_place)
        norms = {key: math.sqrt(value) for key, value in self._floats(squares).items()}
        return {id(t): norms.get(id(t), 0.0) for t in tensors}

    def _floats(self, scalars: dict[int, Any]) -> dict[int, float]:
        return floats(self.torch, scalars)

    # ------------------------------------------------------------------ snapshots and RNG
    def snapshot(
        self, tensors: list[Any], with_optimizer: bool, offload: str = "host", directory: "str | None" = None
    ) -> TorchSnapshot:
        """Copies of the tensors (and their gradients, and the optimizer state) in host memory or a
        memory-mapped file (`offload`), one tensor at a time: nothing is duplicated on the device."""
        torch = self.torch
        grads = {id(t): t.grad for t in tensors if isinstance(t, torch.nn.Parameter)}
        state = {}
        if with_optimizer and self.optimizer is not None:
            state = {param: dict(values) for param, values in self.optimizer.state.items()}
        held = [local_tensor(t) for t in tensors] + [g for g in grads.values() if g is not None]
        held += [v for values in state.values() for v in values.values() if torch.is_tensor(v)]
        store = HostStore(sum(aligned(t.numel() * t.element_size()) for t in held), offload, directory,
                          self._pinned_allocator(held))

        def host_copy(tensor: Any) -> Any:
            tensor = local_tensor(tensor).detach()
            raw = torch.from_numpy(store.take(tensor.numel() * tensor.element_size()))
            return raw.view(tensor.dtype).view(tensor.shape).copy_(tensor)

        with torch.no_grad():
            copies = {id(t): host_copy(t) for t in tensors}
            saved_grads = {key: None if g is None else host_copy(g) for key, g in grads.items()}
            optimizer_state = None
            if with_optimizer and self.optimizer is not None:
                optimizer_state = {
                    param: {k: _Saved(host_copy(v), local_tensor(v).device) if torch.is_tensor(v) else copy.deepcopy(v)
                            for k, v in values.items()}
                    for param, values in state.items()
                }
        return TorchSnapshot(list(tensors), copies, saved_grads, optimizer_state, store)

    def _pinned_allocator(self, held: list) -> Any:
        """Page-locked host memory when the tensors live on CUDA: device-to-host copies into
        pageable memory go through the driver's staging buffers at a fraction of the bus speed."""
        torch = self.torch
        if not any(t.device.type == "cuda" for t in held):
            return None
        return lambda nbytes: torch.empty(nbytes, dtype=torch.uint8, pin_memory=True).numpy()

    def restore(self, snapshot: TorchSnapshot) -> None:
        """Everything back as it was, bitwise; in place where the live tensor still fits, so
        restore allocates on the device only what the step had freed or replaced."""
        with self.torch.no_grad():
            for tensor in snapshot.tensors:
                if id(tensor) not in snapshot.written_back:
                    local_tensor(tensor).copy_(snapshot.copies[id(tensor)])
            for tensor in snapshot.tensors:
                if id(tensor) in snapshot.grads:
                    saved = snapshot.grads[id(tensor)]
                    tensor.grad = None if saved is None else self._put_back(tensor.grad, saved, tensor.device)
            if snapshot.optimizer_state is not None:
                restored = {}
                for param, values in snapshot.optimizer_state.items():
                    live = self.optimizer.state.get(param, {})
                    restored[param] = {
                        k: self._put_back(live.get(k), v.host, v.device) if isinstance(v, _Saved) else v
                        for k, v in values.items()
                    }
                self.optimizer.state.clear()
                self.optimizer.state.update(restored)
        snapshot.release()

    def _put_back(self, live: Any, saved: Any, device: Any) -> Any:
        """`saved` (a host copy) written into `live` when that has the same shape, dtype and device
        (a DTensor: its local part), else into a new tensor on `device`."""
        torch = self.torch
        target = local_tensor(live) if torch.is_tensor(live) else None
        if target is not None and (target.shape, target.dtype, target.device) == (saved.shape, saved.dtype, device):
            target.copy_(saved)
            return live
        return torch.empty(saved.shape, dtype=saved.dtype, device=device).copy_(saved)

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


def norms(torch: Any, tensors: dict[int, Any]) -> dict[int, float]:
    """L2 norm of each tensor, on its device, accumulated in float32 at least (float64 stays
    float64; bfloat16 and float16 are widened)."""
    present = {}
    for key, tensor in tensors.items():
        data = local_tensor(tensor).detach()
        data = data if data.is_floating_point() else data.float()
        present[key] = torch.linalg.vector_norm(data, dtype=torch.promote_types(data.dtype, torch.float32))
    return floats(torch, present)


def floats(torch: Any, scalars: dict[int, Any]) -> dict[int, float]:
    """Python floats of 0-d tensors: one device-to-host transfer per device instead of one
    synchronisation per tensor."""
    by_device: dict[Any, list[int]] = {}
    for key, value in scalars.items():
        by_device.setdefault(value.device, []).append(key)
    result = {}
    for keys in by_device.values():
        values = torch.stack([scalars[k].to(torch.float64) for k in keys]).cpu().tolist()
        result.update(zip(keys, values))
    return result


def outside_compile(torch: Any, hook: Callable) -> Callable:
    """`hook` kept out of Dynamo's traces (torch.compile): it runs eagerly, on the real tensors
    before any later in-place op, and acclint's own code is never compiled into the user's graphs."""
    disable = getattr(getattr(torch, "compiler", None), "disable", None)
    return hook if disable is None else disable(hook)


def unwrap(model: Any) -> Any:
    """The user's module inside DDP / DataParallel / torch.compile wrappers."""
    while type(model).__name__ in WRAPPER_ATTRIBUTES and hasattr(model, WRAPPER_ATTRIBUTES[type(model).__name__]):
        model = getattr(model, WRAPPER_ATTRIBUTES[type(model).__name__])
    return model
