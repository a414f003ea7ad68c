"""The manual probe, for loops capture() cannot drive (Megatron train_step, pipeline schedules).

    probe = Probe(model, optimizer)          # before step 0: weights, optimizer, mode, environment
    loss = train_step(...)                   # the user's own step 0
    probe.record(0, loss, batch=batch)       # torch: gradients read from .grad / .main_grad
    probe.record(0, loss, grads=grads)       # MindSpore: pass the grads value_and_grad gave you
    loss = train_step(...)                   # step 1 (next batch)
    probe.record(1, loss)
    probe.save("npu.json")

Under torch.distributed (Megatron / MindSpeed tensor and pipeline parallel) every rank builds the
probe, records and saves: ranks without a loss (pipeline stages before the last) pass None, and
save() writes one fingerprint of the whole model, on rank 0 (see sharded_run).

Call record(0, ...) after the optimizer step but before gradients are zeroed. The step-1 loss
is on the next batch, so it compares only with another probe fed the same data. `batch` (the
step-0 batch, optional) adds the data stage; the forward stage (activations) is capture's only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from acclint.runtime_checks.capture.capture import batch_records, check_optimizer_holds_model, describe, record_clipping
from acclint.runtime_checks.model.errors import FingerprintError
from acclint.runtime_checks.model.fingerprint import Fingerprint, StepRecord
from acclint.runtime_checks.adapters.frameworks import adapter_for
from acclint.runtime_checks.adapters.offload import check_offload
from acclint.runtime_checks.adapters.records import global_norm, loss_value, require_finite
from acclint.runtime_checks.distributed.sharded_run import DEFAULT_TIMEOUT, ShardedRun


class Probe:
    def __init__(
        self,
        model: Any,
        optimizer: Any = None,
        *,
        track_updates: bool = True,
        keep_tensors: bool = False,
        offload: str = "host",
        offload_dir: str | None = None,
        tensor_parallel_group: Any = None,
        timeout: float = DEFAULT_TIMEOUT,
        clip_grad_norm: float | None = None,
    ) -> None:
        """Record the step-0 state now. `track_updates` keeps a copy of the trainable weights until
        record(0) so the per-parameter update norms can be measured: in host memory, or with
        `offload="disk"` in a memory-mapped file in `offload_dir`; never on the model's device.
        `tensor_parallel_group` and `timeout`: as for capture, under torch.distributed.
        `clip_grad_norm`: the max norm the loop clips gradients to (None: no clipping). It is recorded
        with the optimizer's settings and compared as one, so a clipping change is reported as such
        (the gradients the probe reads after the step are the clipped ones)."""
        check_offload(offload)
        if clip_grad_norm is not None and optimizer is None:
            raise FingerprintError("clip_grad_norm is recorded with the optimizer's settings: pass the optimizer too")
        self._adapter = adapter_for(model, optimizer)
        self._run = ShardedRun.start(self._adapter, tensor_parallel_group, timeout)
        params, state = self._adapter.named_params(), self._adapter.named_state()
        if optimizer is not None:
            check_optimizer_holds_model(self._adapter, params, state)
        self._params = params
        self._trainable = [item for item in params if item.trainable]
        self._fingerprint = describe(self._adapter, "probe", params, state, keep_tensors, self._run)
        record_clipping(self._fingerprint, clip_grad_norm)
        self._initial: Any = None
        if track_updates:
            self._initial = self._adapter.snapshot([item.tensor for item in self._trainable], False, offload, offload_dir)
        self._step: StepRecord | None = None

    def record(self, step: int, loss: Any, grads: Any = None, batch: Any = None) -> None:
        """Record the loss of step 0 or 1 (and at step 0 the gradients and the batch; see the module docstring)."""
        # A pipeline stage before the last has no loss; the run takes the last stage's.
        value = None if loss is None and self._run is not None else loss_value(loss, "the recorded loss")
        if step == 0:
            if batch is not None:
                self._fingerprint.batch = batch_records(self._adapter, batch)
                if self._run is not None:
                    self._run.batch = batch
            self._step = StepRecord(
                loss=value,
                grad_norm=None,
                grad_norms={},
                loss_after_step=None,
                after_step_batch="next",
                update_norms=self._update_norms(),
                step_kept=None,
            )
            self._step.grad_norms = self._grad_norms(grads)
            self._step.grad_norm = global_norm(self._step.grad_norms.values()) if self._step.grad_norms else None
            self._fingerprint.step = self._step
            require_finite(value, "step-0 loss", "fix the run before comparing", self._fingerprint)
        elif step == 1:
            if self._step is None:
                raise FingerprintError("record step 0 before step 1")
            self._step.loss_after_step = value
            require_finite(value, "step-1 loss", "the step-0 loss was finite, so the first update diverged", self._fingerprint)
        else:
            raise FingerprintError(f"the probe records steps 0 and 1, not step {step}")

    def fingerprint(self) -> Fingerprint:
        """The fingerprint; in a distributed run a collective (every rank calls it, or save)."""
        if self._step is None:
            raise FingerprintError("nothing recorded yet: call probe.record(0, loss) after the first training step")
        if self._run is not None:
            self._fingerprint, self._run = self._run.finish(self._fingerprint), None
        return self._fingerprint

    def save(self, path: str | Path) -> Path:
        return self.fingerprint().save(path)

    # ------------------------------------------------------------------ helpers
    def _update_norms(self) -> dict[str, float]:
        if self._initial is None:
            return {}
        tensors = [item.tensor for item in self._trainable]
        norms = self._adapter.diff_norms(tensors, self._initial)
        self._initial.release()  # the copy is no longer needed
        self._initial = None
        return {item.name: norms[id(item.tensor)] for item in self._trainable}

    def _grad_norms(self, grads: Any) -> dict[str, float | None]:
        adapter = self._adapter
        by_key = {adapter.key(item.tensor): item for item in self._params}
        if grads is None:
            tensors = adapter.current_grads()
        elif isinstance(grads, Mapping):
            by_name = {n: adapter.key(item.tensor) for item in self._params for n in (item.name, item.native_name)}
            unknown = [name for name in grads if name not in by_name]
            if unknown:
                raise FingerprintError(f"grads names not in the model: {unknown[:5]}")
            tensors = {by_name[name]: tensor for name, tensor in grads.items()}
        elif isinstance(grads, Sequence):
            order = adapter.grad_order()
            if len(grads) != len(order):
                raise FingerprintError(
                    f"got {len(grads)} gradients for {len(order)} parameters; pass them in the optimizer's "
                    "parameter order (as value_and_grad returns them) or as a {name: grad} dict"
                )
            tensors = dict(zip(order, grads))
        else:
            raise FingerprintError(f"grads must be a sequence or a {{name: grad}} dict, got {type(grads).__name__}")
        if all(t is None for t in tensors.values()):
            return {}
        return {by_key[key].name: norm for key, norm in adapter.norms(tensors).items() if key in by_key}
