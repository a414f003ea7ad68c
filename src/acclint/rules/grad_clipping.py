"""Category `mixed-precision`: gradients clipped while still multiplied by the loss scale
(docs/knowledge/mixed-precision.md#clipping-with-a-loss-scaler)."""

from __future__ import annotations

from functools import lru_cache
from typing import Iterator, Optional

from acclint.knowledge import table
from acclint.linter.facts import Call, FileFacts
from acclint.linter.rulebase import Example, RuleDoc
from acclint.rules.base import ExplicitRule, Written
from acclint.rules.flow import cached, receiver


@lru_cache(maxsize=1)
def _gc() -> dict:
    return table("grad_clipping")


def _scopes(facts: FileFacts) -> dict:
    """Calls of each function in source order."""
    return cached(facts, "calls-by-scope", _calls_by_scope)


def _calls_by_scope(facts: FileFacts) -> dict:
    scopes: dict = {}
    for call in facts.calls:  # recorded in source order
        scopes.setdefault(call.scope, []).append(call)
    return scopes


def _is_clip(call: Call) -> bool:
    if call.method not in _gc()["torch_clip_methods"]:
        return False
    if call.names:
        return True
    base = call.callee.rsplit(".", 1)[0].lower()
    return not any(r in base for r in _gc()["self_unscaling_receivers"])


def _scaled_backward(call: Call, scaled_names: dict) -> Optional[str]:
    """The scaler of `scaler.scale(loss).backward()` (or of `s = scaler.scale(loss); s.backward()`)."""
    if call.method != "backward":
        return None
    target = receiver(call)
    if target is None:
        return None
    if target.chain == ("scale",) and target.base and not target.base_call and not target.base_names:
        return target.base
    return scaled_names.get(target.dotted or "")


def _method_of(call: Call, scaler: str, method: str) -> bool:
    return call.callee == f"{scaler}.{method}"


class ClipBeforeUnscale(ExplicitRule):
    code = "ACL610"
    name = "clip-before-unscale"
    category = "mixed-precision"
    severity = "warning"
    summary = "gradients clipped after scaler.scale(loss).backward() without scaler.unscale_(optimizer) first"
    doc = RuleDoc(
        what="Reports `clip_grad_norm_` / `clip_grad_value_` that runs after `scaler.scale(loss).backward()` and "
        "before `scaler.step(optimizer)` with no `scaler.unscale_(optimizer)` in between (torch.amp, torch.cuda.amp "
        "and torch_npu GradScalers), in the same function or in a function the scaler is passed to; clipping "
        "inside apex's `with amp.scale_loss(...)` block after `scaled_loss.backward()`; and MindSpore "
        "`ops.clip_by_global_norm` applied to gradients before `loss_scaler.unscale(...)`. Megatron, MindSpeed "
        "and DeepSpeed optimizers unscale inside their own `step()` and are not reported.",
        why="The gradients are still multiplied by the loss scale: 65,536 (2**16) at the start, then halved on "
        "every overflow and doubled every 2,000 clean steps. `clip_grad_norm_(params, 1.0)` then measures a norm "
        "65,536 times too large and clips to 1/65,536 of the intended size, so the effective threshold is "
        "max_norm / scale. GPU and NPU runs overflow at different steps (fp16 kernels, saturation mode), so their "
        "scales, and hence their clipping, differ from then on: the loss curves part although each side is "
        "'correct'. `scaler.step` skips its own unscale when `unscale_` was already called, so adding it costs "
        "nothing.",
        fix="Call `scaler.unscale_(optimizer)` right before clipping (PyTorch AMP docs, 'Working with unscaled "
        "gradients'); with apex, clip `amp.master_params(optimizer)` after the `with amp.scale_loss(...)` block; "
        "with MindSpore, clip the result of `loss_scaler.unscale(grads)`.",
        references=("https://pytorch.org/docs/stable/notes/amp_examples.html#working-with-unscaled-gradients",
                    "https://www.mindspore.cn/docs/en/master/api_python/amp/mindspore.amp.DynamicLossScaler.html"),
    )
    invalid = (
        Example.script("""
            import torch

            scaler = torch.cuda.amp.GradScaler()
            for batch in loader:
                with torch.autocast("cuda"):
                    loss = model(batch).mean()
                scaler.scale(loss).backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: ACL610
                scaler.step(optimizer)
                scaler.update()
        """, "one training loop"),
        Example.script("""
            import torch
            import torch_npu
            from torch.nn.utils import clip_grad_value_


            def train_step(model, batch, optimizer, scaler, max_grad):
                with torch.autocast("npu"):
                    loss = model(batch).mean()
                optimizer.zero_grad()
                scaler.scale(loss).backward()
                if max_grad:
                    clip_grad_value_(model.parameters(), max_grad)  # expect: ACL610
                scaler.step(optimizer)
                scaler.update()


            def main():
                scaler = torch.npu.amp.GradScaler()
                for batch in loader:
                    train_step(model, batch, optimizer, scaler, 5.0)
        """, "a training-step function that receives the scaler"),
        Example.script("""
            import torch


            class Trainer:
                def clip_and_step(self, grad_scaler):
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)  # expect: ACL610
                    grad_scaler.step(self.optimizer)
                    grad_scaler.update()

                def fit(self, batch):
                    loss = self.model(batch).mean()
                    self.scaler.scale(loss).backward()
                    self.clip_and_step(self.scaler)
        """, "clipping in the method the scaler is passed to"),
        Example.script("""
            import torch
            from apex import amp

            model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
            for batch in loader:
                loss = model(batch).mean()
                with amp.scale_loss(loss, optimizer) as scaled_loss:
                    scaled_loss.backward()
                    torch.nn.utils.clip_grad_norm_(amp.master_params(optimizer), 1.0)  # expect: ACL610
                optimizer.step()
        """, "apex: clipping inside the scale_loss block"),
        Example.script("""
            import mindspore as ms
            from mindspore import ops
            from mindspore.amp import DynamicLossScaler

            loss_scaler = DynamicLossScaler(scale_value=2**16, scale_factor=2, scale_window=1000)


            def train_step(data, label):
                loss, grads = grad_fn(data, label)
                grads = ops.clip_by_global_norm(grads, 1.0)  # expect: ACL610
                grads = loss_scaler.unscale(grads)
                optimizer(grads)
                return loss
        """, "MindSpore: clip_by_global_norm before loss_scaler.unscale"),
    )
    valid = (
        Example.script("""
            import torch

            scaler = torch.amp.GradScaler("cuda")
            for batch in loader:
                with torch.autocast("cuda"):
                    loss = model(batch).mean()
                scaler.scale(loss).backward()
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
                scaler.update()
        """, "unscale_ before clipping"),
        Example.script("""
            import torch


            def train_step(model, batch, optimizer, scaler, max_norm):
                loss = model(batch).mean()
                scaler.scale(loss).backward()
                if max_norm:
                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
                scaler.step(optimizer)
                scaler.update()
        """, "a training-step function that unscales before clipping"),
        Example.script("""
            import torch
            from apex import amp

            for batch in loader:
                loss = model(batch).mean()
                with amp.scale_loss(loss, optimizer) as scaled_loss:
                    scaled_loss.backward()
                torch.nn.utils.clip_grad_norm_(amp.master_params(optimizer), 1.0)
                optimizer.step()
        """, "apex: clipping after the scale_loss block"),
        Example.script("""
            import torch
            from megatron.core.optimizer import get_megatron_optimizer

            optimizer = get_megatron_optimizer(config, model)
            loss = forward_step(model, batch)
            optimizer.scale_loss(loss).backward()
            update_successful, grad_norm, _ = optimizer.step()  # unscales, then clips, inside
        """, "Megatron's optimizer unscales and clips in step()"),
        Example.script("""
            from mindspore import ops


            def train_step(data, label):
                loss, grads = grad_fn(data, label)
                grads = loss_scaler.unscale(grads)
                grads = ops.clip_by_global_norm(grads, 1.0)
                optimizer(grads)
                return loss
        """, "MindSpore: clipping the unscaled gradients"),
    )

    def written(self, facts: FileFacts) -> Iterator[Written]:
        scopes = _scopes(facts)
        for scope, calls in scopes.items():
            yield from self._torch_scaler(facts, scopes, calls)
            yield from self._mindspore(calls)
        yield from self._apex(facts, scopes)

    # -- torch / torch_npu GradScaler --------------------------------------------------------
    def _torch_scaler(self, facts: FileFacts, scopes: dict, calls: list) -> Iterator[Written]:
        scaled_names: dict = {}
        for index, call in enumerate(calls):
            if call.method == "scale" and call.assigned_to and "." in call.callee and not call.names:
                scaled_names[call.assigned_to] = call.callee.rsplit(".", 1)[0]
            scaler = _scaled_backward(call, scaled_names)
            if scaler is None:
                continue
            backward_line = facts.spans[call.node].line
            yield from self._clips_before_step(calls[index + 1:], scaler, backward_line)
            for later in calls[index + 1:]:
                if _method_of(later, scaler, "unscale_") or _method_of(later, scaler, "step"):
                    break
                callee = _local_function(facts, later)
                if callee is None:
                    continue
                param = _param_receiving(facts.functions[callee].params, later, scaler)
                if param is not None:
                    yield from self._clips_before_step(scopes.get(callee, []), param, backward_line)

    def _clips_before_step(self, calls: list, scaler: str, backward_line: int) -> Iterator[Written]:
        for call in calls:
            if _method_of(call, scaler, "unscale_") or _method_of(call, scaler, "step") \
                    or _scaled_backward(call, {}) == scaler:
                return
            if _is_clip(call):
                yield Written(call.node, _message(call.method, f"`{scaler}.scale(loss).backward()` at line "
                                          f"{backward_line}", f"`{scaler}.unscale_(optimizer)`"),
                              f"call `{scaler}.unscale_(optimizer)` before `{call.method}`")

    # -- apex --------------------------------------------------------------------------------
    def _apex(self, facts: FileFacts, scopes: dict) -> Iterator[Written]:
        names = frozenset(_gc()["apex_scale_loss"])
        for block in facts.blocks:
            if block.kind != "with" or not block.targets or not any(
                    item.base_call and item.base_names & names for item in block.items):
                continue
            backward = None
            for call in scopes.get(block.scope, ()):
                if not block.head_end < call.order < block.end:
                    continue
                if call.method == "backward" and call.callee.rsplit(".", 1)[0] in block.targets:
                    backward = call
                elif backward is not None and _is_clip(call):
                    yield Written(call.node, _message(call.method, "`scaled_loss.backward()` inside "
                                              "`amp.scale_loss`", "the end of the `with amp.scale_loss(...)` block"),
                                  "clip after the `with amp.scale_loss(...)` block, which unscales on exit")

    # -- MindSpore ---------------------------------------------------------------------------
    def _mindspore(self, calls: list) -> Iterator[Written]:
        clips = frozenset(_gc()["mindspore_clips"])
        for index, call in enumerate(calls):
            if not call.names & clips:
                continue
            grads = call.arg("x", 0)
            flowing = {grads.value.dotted} if grads is not None and grads.value.dotted else set()
            if call.assigned_to:
                flowing.add(call.assigned_to)
            for later in calls[index + 1:]:
                if later.method != "unscale" or later.names or "." not in later.callee:
                    continue
                arg = later.arg("inputs", 0)
                if arg is not None and arg.value.dotted in flowing:
                    yield Written(call.node, _message("clip_by_global_norm", "the scaled gradients",
                                                      f"`{later.callee}(...)`"),
                                  f"clip the result of `{later.callee}(grads)` instead")
                    break


def _local_function(facts: FileFacts, call: Call) -> Optional[str]:
    """The qualified name of a function of this file that `call` runs (`step(...)`, `self.step(...)`)."""
    if call.callee in facts.functions:
        return call.callee
    if call.callee.startswith("self.") and call.callee.count(".") == 1:
        caller = facts.functions.get(call.scope)
        if caller is not None and caller.owner:
            name = f"{caller.owner}.{call.callee[5:]}"
            return name if name in facts.functions else None
    return None


def _param_receiving(params: tuple, call: Call, scaler: str) -> Optional[str]:
    """The parameter of the called function that receives `scaler`."""
    params = params[1:] if params[:1] == ("self",) else params
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for position, arg in enumerate(positional):
        if arg.value.dotted == scaler and position < len(params):
            return params[position]
    for arg in call.args:
        if arg.keyword and arg.value.dotted == scaler and arg.keyword in params:
            return arg.keyword
    return None


def _message(clip: str, scaled_by: str, unscaled_by: str) -> str:
    scale = _gc()["init_scale"]
    return (f"`{clip}` clips gradients that are still multiplied by the loss scale ({scaled_by}; nothing unscales "
            f"them before {unscaled_by}): the threshold is effectively divided by the scale ({scale:,} at the "
            "start), and the GPU and NPU runs clip differently once their scales differ.")


RULES = [ClipBeforeUnscale()]
