"""capture(): one real training step, recorded; framework-neutral orchestration over an adapter.

By default the step is rolled back: parameters, running statistics, optimizer state, gradients
and the RNG are put back as they were, so the user's training run after `capture` is the run
they would have had without it. `keep_step=True` keeps the step instead (the model then stands
after one update, as after a normal training step; the extra evaluation forward leaves no trace).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable

from acclint.runtime_checks.model.ranks import rank_info
from acclint.runtime_checks.model.errors import FingerprintError, NonFiniteLossError
from acclint.runtime_checks.model.fingerprint import Fingerprint, StepRecord, ValueRecord
from acclint.runtime_checks.capture.forward import ForwardRecorder
from acclint.runtime_checks.adapters.frameworks import adapter_for
from acclint.runtime_checks.model.module_settings import module_records
from acclint.runtime_checks.adapters.offload import check_offload
from acclint.runtime_checks.distributed.sharded_run import DEFAULT_TIMEOUT, ShardedRun
from acclint.runtime_checks.adapters.records import (
    NamedTensor,
    global_norm,
    named_tensors,
    require_finite,
    tensor_records,
    value_record,
)


def capture(
    model: Any,
    optimizer: Any,
    loss_fn: Callable[[Any, Any], Any],
    batch: Any,
    *,
    keep_step: bool = False,
    clip_grad_norm: float | None = None,
    keep_tensors: bool = False,
    activations: bool = True,
    tensor_parallel_group: Any = None,
    timeout: float = DEFAULT_TIMEOUT,
    offload: str = "host",
    offload_dir: str | None = None,
) -> Fingerprint:
    """Run exactly one training step of `model` on `batch` and record its fingerprint.

    loss_fn(model, batch) must return a scalar loss tensor. `clip_grad_norm` clips the gradients
    before the step, as a loop with gradient clipping would. `keep_tensors` keeps full copies of
    the initial tensors, written to a side .npz by `Fingerprint.save`. `activations` records every
    module's output (and every leaf module's inputs) during the step's forward pass.
    The rollback snapshot is kept in host memory, or with `offload="disk"` in a memory-mapped file
    in `offload_dir` (default: the temporary folder), never on the model's device.

    Under torch.distributed every rank calls capture and gets the same fingerprint of the whole
    model (see sharded_run): `tensor_parallel_group` is the group of Megatron-style parameters
    (`tensor_model_parallel`, `partition_dim`) when megatron.core.parallel_state does not say;
    `timeout` (seconds) bounds the wait for the other ranks.
    """
    if optimizer is None:
        raise FingerprintError("capture needs the optimizer that trains the model (for a loop it cannot drive, use Probe)")
    check_offload(offload)
    adapter = adapter_for(model, optimizer)
    run = ShardedRun.start(adapter, tensor_parallel_group, timeout)
    params, state = adapter.named_params(), adapter.named_state()
    with run.guard("capture") if run else contextlib.nullcontext():
        check_optimizer_holds_model(adapter, params, state)
    fingerprint = describe(adapter, "capture", params, state, keep_tensors, run)
    record_clipping(fingerprint, clip_grad_norm)
    fingerprint.batch = batch_records(adapter, batch)
    if run is not None:
        run.batch = batch
    recorder = None
    if activations and adapter.forward_hooks_unavailable() is None:
        recorder = ForwardRecorder(adapter)
    try:
        with run.guard("the captured step") if run else contextlib.nullcontext():
            fingerprint.step = _one_step(adapter, loss_fn, batch, params, keep_step, clip_grad_norm, recorder,
                                         (offload, offload_dir))
    except NonFiniteLossError as error:
        error.fingerprint = fingerprint
        raise
    finally:
        if recorder is not None:
            fingerprint.forward = recorder.records
    if run is not None:
        fingerprint = run.finish(fingerprint)
    after = fingerprint.step.loss_after_step
    require_finite(
        after,
        "loss after one optimizer step",
        f"the step-0 loss {fingerprint.step.loss!r} was finite, so the update itself diverged "
        "(look at lr, eps, loss scaling, gradient clipping)",
        fingerprint,
    )
    return fingerprint


def describe(
    adapter: Any, source: str, params: list[NamedTensor], state: list[NamedTensor], keep_tensors: bool,
    run: ShardedRun | None = None,
) -> Fingerprint:
    """Everything recorded before the step: tensors, mode, optimizer, environment, rank.

    In a distributed `run` the tensor records are the full logical tensors' (kept by the run
    until `run.finish`); this rank's own fingerprint holds none."""
    kept: dict[str, Any] | None = {} if keep_tensors else None
    if run is not None:
        if keep_tensors:
            raise FingerprintError("keep_tensors is not available in a distributed run (the full tensors live on no rank)")
        run.tensor_records(params, state)
    names = {adapter.key(item.tensor): item.name for item in params}
    rank, world_size = rank_info(adapter.framework)
    return Fingerprint(
        framework=adapter.framework,
        source=source,
        model=adapter.model_class,
        device=adapter.device,
        training=adapter.training(),
        params=[] if run else tensor_records(params, adapter.to_host, kept, adapter.summarize_many),
        state=[] if run else tensor_records(state, adapter.to_host, kept, adapter.summarize_many),
        optimizer=None if adapter.optimizer is None else adapter.optimizer_record(names),
        step=None,
        env=adapter.environment(),
        rank=rank,
        world_size=world_size,
        tensors=kept,
        modules=module_records(adapter.framework, ((name, module) for name, module, _ in adapter.modules())),
    )


def record_clipping(fingerprint: Fingerprint, clip_grad_norm: float | None) -> None:
    """The clip value, among the optimizer's settings outside its groups (compared as "clip-grad")."""
    if clip_grad_norm is None:
        return
    if isinstance(clip_grad_norm, bool) or not isinstance(clip_grad_norm, (int, float)) or not clip_grad_norm > 0:
        raise FingerprintError(f"clip_grad_norm must be a positive number (the max norm), got {clip_grad_norm!r}")
    fingerprint.optimizer.extra["clip-grad"] = float(clip_grad_norm)


def batch_records(adapter: Any, batch: Any) -> list[ValueRecord]:
    """Every tensor of the batch by its path, hashed by value, with one short hash per sample."""
    return [
        value_record(path, adapter.summary_input(tensor), adapter.dtype_name(tensor), per_sample=True)
        for path, tensor in named_tensors(batch, adapter.is_tensor)
        if adapter.readable(tensor)
    ]


def check_optimizer_holds_model(adapter: Any, params: list[NamedTensor], state: list[NamedTensor]) -> None:
    held = adapter.optimizer_param_keys()
    in_model = {adapter.key(item.tensor) for item in params + state}
    foreign = [key for key in held if key not in in_model]
    if foreign:
        raise FingerprintError(
            f"the optimizer holds {len(foreign)} parameter(s) that are not in the model: was it built for "
            "another instance of the model (before a deepcopy, or before the parameters were replaced)?"
        )
    trainable = {adapter.key(item.tensor) for item in params if item.trainable}
    if not trainable & set(held):
        raise FingerprintError("the optimizer holds none of the model's trainable parameters")


def _one_step(
    adapter: Any,
    loss_fn: Callable,
    batch: Any,
    params: list[NamedTensor],
    keep_step: bool,
    clip_grad_norm: float | None,
    recorder: ForwardRecorder | None = None,
    offload: tuple[str, str | None] = ("host", None),
) -> StepRecord:
    trainable = [item for item in params if item.trainable]
    names = {adapter.key(item.tensor): item.name for item in params}
    before = adapter.snapshot(adapter.all_tensors(), True, *offload)
    rng_before = adapter.rng_state()
    kept = None
    try:
        with recorder.hooks() if recorder is not None else contextlib.nullcontext():
            loss, pending = adapter.forward_for_grad(loss_fn, batch)
        require_finite(loss, "step-0 loss", "fix the run (data, initialisation, loss function) before comparing")
        grads = adapter.gradients(pending)
        grad_norms = {names[key]: norm for key, norm in adapter.norms(grads).items() if key in names}
        if clip_grad_norm is not None:
            grads = adapter.clip(grads, clip_grad_norm)
        adapter.optimizer_step(grads)
        if keep_step:
            update_norms = adapter.diff_norms([item.tensor for item in trainable], before)
            kept = (adapter.snapshot(adapter.buffers(), False, *offload), adapter.rng_state())
        adapter.set_rng_state(rng_before)  # the evaluation forward sees the step-0 dropout masks
        loss_after = adapter.evaluate(loss_fn, batch)
        if not keep_step:  # measured while putting the weights back: one pass over them, not two
            update_norms = adapter.diff_norms([item.tensor for item in trainable], before, write_back=True)
    finally:
        if kept is not None:
            adapter.restore(kept[0])  # undo the running-stat update of the evaluation forward only
            adapter.set_rng_state(kept[1])
            before.release()
        else:
            adapter.restore(before)
            adapter.set_rng_state(rng_before)
    return StepRecord(
        loss=loss,
        grad_norm=global_norm(grad_norms.values()),
        grad_norms=grad_norms,
        loss_after_step=loss_after,
        after_step_batch="same",
        update_norms={names[key]: norm for key, norm in update_norms.items()},
        step_kept=keep_step,
    )
