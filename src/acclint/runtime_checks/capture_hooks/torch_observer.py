"""Step 0 of a torch training run, recorded from torch's global hooks: no edit to the training loop.

What `Probe` records, taken at the moments a loop passes through anyway:

* the model: the module called at the top of the stack (not from inside another module) with
  gradients on, that holds the optimizer's parameters (or the one a callback names);
* the batch: the inputs of that model's top-level calls before the first optimizer step (every
  micro-batch under gradient accumulation), and the forward statistics (`ForwardRecorder`);
* the loss: the losses reaching `torch.autograd.backward` (and so `Tensor.backward`), summed over
  the micro-batches, a GradScaler's scaling taken off;
* weights, optimizer, environment and gradient norms: when the first optimizer step begins
  (after unscaling and clipping; for an optimizer given a closure, when the closure returns);
* the update: when that step ends; the step-1 loss, when asked for, when the next step begins.

Every hook and wrapper is removed once the fingerprint is taken, so later steps run untouched.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from acclint.runtime_checks.capture_hooks.candidate import Candidate
from acclint.runtime_checks.capture_hooks.step_probe import StepProbe
from acclint.runtime_checks.model.errors import FingerprintError
from acclint.runtime_checks.model.fingerprint import Fingerprint
from acclint.runtime_checks.adapters.torch_adapter import outside_compile, unwrap


class TorchStepObserver:
    """Installs the hooks; calls `finish(fingerprint)` once step 0 (and, with `steps` >= 2, the
    step-1 loss) is recorded, or `fail(error)` when recording fails. `model` names the model when
    the caller knows it (a trainer callback); `add_batch` (a callback's batches) replaces the inputs seen."""

    def __init__(self, finish: Callable[[Fingerprint], None], fail: Callable[[BaseException], None],
                 model: Any = None, steps: int = 1) -> None:
        import torch

        self.torch = torch
        self.finish, self.fail = finish, fail
        self.model, self.steps = model, steps
        self.batches: list[Any] = []  # given by a callback (the trainer's batch): replaces the inputs seen
        self.models: dict[int, Candidate] = {}
        self.called: dict[int, Any] = {}  # modules of the named model called at the top level
        self.depth = 0
        self.in_backward = False
        self.losses: list[float] = []
        self.scaled: dict[int, float] = {}  # id(scaled loss) -> the loss before GradScaler.scale
        self.clip: float | None = None  # max_norm of clip_grad_norm_ before the first step
        self.unclipped: dict[int, float] = {}  # id(parameter) -> its gradient norm before clipping
        self.probe: StepProbe | None = None
        self.optimizer: Any = None
        self.stepped = False  # step 0 recorded, waiting for the later steps' losses
        self.step_losses: list[float] = []  # each step's loss (--steps N > 2)
        self.step_lrs: list[list[float]] = []  # each step's lr per group, as the step uses it
        self.unrecorded: str | None = None  # why fewer steps than asked for were recorded
        self._batch: Any = None
        self._ready: Fingerprint | None = None
        self.done = False
        self._undo: list[Callable[[], None]] = []

    # ------------------------------------------------------------------ installing
    def install(self) -> "TorchStepObserver":
        import torch.nn.modules.module as module_hooks
        import torch.optim.optimizer as optim

        torch = self.torch
        handles = [
            module_hooks.register_module_forward_pre_hook(outside_compile(torch, self._forward_enter)),
            module_hooks.register_module_forward_hook(outside_compile(torch, self._forward_leave), with_kwargs=True,
                                                      always_call=True),
            optim.register_optimizer_step_pre_hook(outside_compile(torch, self._step_begins)),
            optim.register_optimizer_step_post_hook(outside_compile(torch, self._step_ends)),
        ]
        self._undo += [handle.remove for handle in handles]
        self._wrap(torch.autograd, "backward", self._backward)
        self._wrap(torch.amp.GradScaler, "scale", self._scale)
        self._wrap(torch.nn.utils, "clip_grad_norm_", self._clip)
        return self

    def _wrap(self, owner: Any, name: str, wrapper: Callable) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            return wrapper(original, *args, **kwargs)

        setattr(owner, name, wrapped)

        def undo() -> None:
            if getattr(owner, name) is wrapped:  # someone else may have wrapped it since
                setattr(owner, name, original)

        self._undo.append(undo)

    def uninstall(self) -> None:
        for model in self.models.values():
            model.stop_recording()
        while self._undo:
            self._undo.pop()()

    # ------------------------------------------------------------------ forward
    def _forward_enter(self, module: Any, args: Any) -> None:
        if self.in_backward or self.probe is not None or self.done:
            return
        if self.depth == 0 and self.torch.is_grad_enabled():
            self._guarded(self._top_level_call, module, args)
        self.depth += 1

    def _top_level_call(self, module: Any, args: Any) -> None:
        model = self._model_of(module)
        if model is not None:
            model.start_recording(module, args)
            if self.model is not None:
                self.called[id(module)] = module

    def _forward_leave(self, module: Any, args: Any, kwargs: Any, _output: Any) -> None:
        if self.in_backward or self.probe is not None or self.done:
            return
        self.depth = max(0, self.depth - 1)
        if self.depth == 0 and self.torch.is_grad_enabled():
            self._guarded(self._top_level_return, module, args, kwargs)

    def _top_level_return(self, module: Any, args: Any, kwargs: Any) -> None:
        model = self._model_of(module)
        if model is not None:
            inputs = list(args) + ([kwargs] if kwargs else [])
            model.inputs.append(inputs[0] if len(inputs) == 1 else inputs)

    def add_batch(self, batch: Any) -> None:
        if self.probe is None:
            self.batches.append(batch)

    def _model_of(self, module: Any) -> "Candidate | None":
        """The candidate model a top-level call belongs to: the named model (a module of it, or a
        wrapper around it such as DDP), else the module itself."""
        owner = self.model if self.model is not None else module
        if self.model is not None and id(unwrap(module)) not in self._named().names:
            return None
        if id(owner) not in self.models:
            self.models[id(owner)] = Candidate(owner, self._broken)
        return self.models[id(owner)]

    def _named(self) -> Candidate:
        if id(self.model) not in self.models:
            self.models[id(self.model)] = Candidate(self.model, self._broken)
        return self.models[id(self.model)]

    # ------------------------------------------------------------------ loss
    def _scale(self, original: Callable, scaler: Any, outputs: Any) -> Any:
        scaled = original(scaler, outputs)
        self._guarded(self._remember_unscaled, scaled, outputs)
        return scaled

    def _remember_unscaled(self, scaled: Any, outputs: Any) -> None:
        if scaled is not outputs and self.torch.is_tensor(outputs) and outputs.numel() == 1:
            self.scaled[id(scaled)] = float(outputs.detach().float().item())

    def _backward(self, original: Callable, tensors: Any, *args: Any, **kwargs: Any) -> Any:
        if not self.in_backward:
            self._guarded(self._loss_reaches_backward, tensors)
        outer, self.in_backward = self.in_backward, True
        try:
            return original(tensors, *args, **kwargs)
        finally:
            self.in_backward = outer

    def _loss_reaches_backward(self, tensors: Any) -> None:
        first = tensors[0] if isinstance(tensors, (tuple, list)) and tensors else tensors
        if self.torch.is_tensor(first) and first.numel() == 1:
            value = self.scaled.pop(id(first), None)
            self.losses.append(float(first.detach().float().item()) if value is None else value)
        if self.probe is None:
            for model in self.models.values():
                model.stop_recording()  # activation checkpointing re-runs forwards inside backward

    def _norm_before_clipping(self, parameters: list[Any]) -> None:
        """Gradient norms as the loop logs them, before clipping (clip_grad_norm_ scales .grad in place)."""
        from acclint.runtime_checks.adapters.torch_adapter import norms

        self.unclipped.update(norms(self.torch, {id(p): p.grad for p in parameters if p.grad is not None}))

    def _clip(self, original: Callable, parameters: Any, max_norm: float, *args: Any, **kwargs: Any) -> Any:
        if self.probe is None and not self.done:
            # a generator (model.parameters()) is read once: the clipping gets the same list
            parameters = [parameters] if self.torch.is_tensor(parameters) else list(parameters)
            self.clip = float(max_norm)
            self._guarded(self._norm_before_clipping, parameters)
        return original(parameters, max_norm, *args, **kwargs)

    # ------------------------------------------------------------------ the optimizer step
    def _step_begins(self, optimizer: Any, args: Any, kwargs: Any) -> Any:
        if self.done or (self.optimizer is not None and optimizer is not self.optimizer):
            return None
        action = self._before_update if self.probe is None else self._later_step
        # torch passes the step's own arguments with the optimizer first: (optimizer, closure?)
        positional = len(args) > 1
        closure = args[1] if positional else kwargs.get("closure")
        if closure is None:
            self._guarded(action, optimizer)
            return None

        def observed() -> Any:  # the loss and gradients exist only once the closure has run
            result = closure()
            self._guarded(action, optimizer)
            return result

        if positional:
            return (args[0], observed, *args[2:]), kwargs
        return args, {**kwargs, "closure": observed}

    def _step_ends(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.done or optimizer is not self.optimizer or self.probe is None or self.stepped:
            return
        self._guarded(self._after_update)

    def _before_update(self, optimizer: Any) -> None:
        self.optimizer = optimizer
        if not self.losses:
            raise FingerprintError("no loss reached backward() before the first optimizer step")
        self.step_lrs.append(group_lrs(optimizer))
        model = self._choose(optimizer)
        model.stop_recording()
        root, records = self._root(model, optimizer)
        with model.state_before_forward():
            probe = StepProbe(root, optimizer)
        probe.take_gradients(self.unclipped)
        probe.add_forward(records)
        if self.clip is not None:
            probe.set_extra("clip-grad", self.clip)  # as capture(clip_grad_norm=) records it
        given = self.batches[0] if len(self.batches) == 1 else self.batches
        # a trainer's batch, unless the model recorded is the module it calls: then, as without the
        # callback, what reached that module
        self._batch = given if self.batches and root is model.module else model.batch()
        self.probe = probe

    def _after_update(self) -> None:
        probe = self.probe
        probe.record(0, sum(self.losses), batch=self._batch)
        self.step_losses.append(sum(self.losses))
        self._batch = None
        self.losses = []
        self.stepped = True
        if self.steps < 2:
            self._finish()
        else:
            self._release_forward()

    def _later_step(self, optimizer: Any) -> None:
        """Step k >= 1 begins: its loss (the batches since step k - 1) and the lr it will use."""
        if not self.losses:  # an optimizer stepped without a loss (a closure-free second optimizer): stop here
            self._finish()
            return
        if len(self.step_losses) == 1:
            self.probe.record(1, sum(self.losses))  # the loss after one update, on the next batch
        self.step_losses.append(sum(self.losses))
        self.step_lrs.append(group_lrs(optimizer))
        self.losses = []
        if len(self.step_losses) >= self.steps:
            self._finish()

    def end(self) -> None:
        """The program ends with step 0 recorded but fewer steps run than asked for: the fingerprint
        is handed on with the steps recorded, saying so. The ranks of a distributed run can no
        longer merge their parts then (the process group may be gone): that is said as the failure."""
        if self.done or not self.stepped:
            return
        why = f"the training ended after {len(self.step_losses)} of the {self.steps} steps asked for"
        if getattr(self.probe, "_run", None) is not None:
            self._broken(FingerprintError(f"{why}; the ranks' parts cannot be merged at exit: capture with --steps "
                                          f"{len(self.step_losses)} or fewer"))
            return
        self.unrecorded = why
        self._guarded(self._finish)

    def _finish(self) -> None:
        self.done = True
        if self.steps > 2:  # before the ranks' parts are merged, so every rank's losses are kept
            self.probe.add_steps(self.step_losses, self.step_lrs, self.unrecorded)
        self._ready = self.probe.fingerprint()
        self.uninstall()

    def _release_forward(self) -> None:
        """Between step 0 and step 1 only the loss is wanted: the forward hooks go now."""
        for model in self.models.values():
            model.stop_recording()
        self.models.clear()
        self._undo[0]()
        self._undo[1]()

    def _guarded(self, action: Callable, *args: Any) -> None:
        """`action` on acclint's side of a hook: its failure ends the observation with one call to
        `fail`, and the user's training goes on untouched."""
        if self.done:
            return
        try:
            action(*args)
        except Exception as error:  # acclint failing must not take the user's training with it
            self._broken(error)
            return
        if self._ready is not None:  # outside the guard: `finish` may stop the run on a mismatch
            fingerprint, self._ready = self._ready, None
            self.finish(fingerprint)

    def _broken(self, error: BaseException) -> None:
        """The observation ends here, every hook removed, and `fail` says why once."""
        if not self.done:
            self.done = True
            self.uninstall()
            self.fail(error)

    def _root(self, model: Candidate, optimizer: Any) -> tuple[Any, list]:
        """The module recorded as the model, and its forward records named from it. A model handed
        over by a trainer that never calls it (a LightningModule: Lightning calls training_step,
        which calls the network) is recorded as the module it calls, as `acclint capture` records
        it without the callback, so the two files of one run compare."""
        records = model.recorder.records
        if self.model is None or id(unwrap(self.model)) in self.called or id(self.model) in self.called:
            return model.module, records
        held = {id(p) for group in optimizer.param_groups for p in group["params"]}
        inside = [m for m in self.called.values() if any(id(p) in held for p in m.parameters())]
        if not inside:
            return model.module, records
        called = max(inside, key=lambda m: sum(1 for p in m.parameters() if id(p) in held))
        if not held <= {id(p) for p in called.parameters()}:
            return model.module, records  # the optimizer trains more than that module: the whole model it is
        path = model.names.get(id(called), "")
        prefix = path + "."
        renamed = []
        for record in records:
            if record.name == path or record.name.startswith(prefix):
                record.name = "" if record.name == path else record.name[len(prefix):]
                renamed.append(record)
        return called, renamed

    def _choose(self, optimizer: Any) -> Candidate:
        """The candidate holding most of the optimizer's parameters (a loss module called at the
        top level, or a frozen teacher, holds none)."""
        held = {id(p) for group in optimizer.param_groups for p in group["params"]}
        if self.model is not None:
            return self._named()
        best, overlap = None, 0
        for model in self.models.values():
            count = sum(1 for p in model.module.parameters() if id(p) in held)
            if count > overlap:
                best, overlap = model, count
        if best is None:
            raise FingerprintError(
                "the first optimizer step came before any module holding its parameters ran forward with gradients on "
                "(a model called only inside torch.no_grad, or an optimizer over tensors that are in no module)"
            )
        return best



def group_lrs(optimizer: Any) -> list[float]:
    """The lr of every param group, as the step about to run uses it (a scheduler set it already)."""
    return [float(group["lr"]) for group in getattr(optimizer, "param_groups", ())]
