"""Category `mixed-precision`: the AMP protocols that must be followed whole. A GradScaler scales the loss,
then unscales, checks for inf/NaN and steps, then adapts its scale; the AMP decorators of custom autograd
Functions act only under the autocast of the device type they name. Written in one file, so reported there."""

from __future__ import annotations

from typing import Iterator, Optional

from acclint.findings import Premise
from acclint.linter.context import FileContext, ProgramContext
from acclint.linter.facts import Call, FileFacts, Value
from acclint.linter.rulebase import Example, Rule, RuleDoc
from acclint.rules.flow import calls_named, calls_with_method, receiver, value_of
from acclint.rules.mixed_precision import mp_names, mp_table, runs_on_npu_untranslated


def _text(value: Optional[Value]) -> str:
    return (value.dotted or "") if value is not None else ""


def _scalers(facts: FileFacts) -> dict:
    """Dotted names that hold a GradScaler (`scaler = GradScaler()`, `self.scaler = ...`, or a receiver of
    `.scale()` named like one) -> whether it may be enabled (False only for a literal `enabled=False`)."""
    constructors = mp_names("torch_grad_scalers")
    found: dict = {}
    for call in calls_named(facts, constructors):
        enabled = call.arg("enabled", 1)
        on = enabled is None or value_of(facts, enabled.value, call).literal is not False
        if call.assigned_to:
            found[call.assigned_to] = on
    for assignment in facts.assignments:
        value = assignment.value
        if value.base_call and value.base_names & constructors and not value.chain:
            found.setdefault(assignment.target, True)
    for call in calls_with_method(facts, ("scale",)):
        name = _text(receiver(call))
        if name and "scaler" in name.rsplit(".", 1)[-1].lower():
            found.setdefault(name, True)
    return found


def _calls_on(facts: FileFacts, name: str, method: str) -> list:
    return [c for c in calls_with_method(facts, (method,)) if _text(receiver(c)) == name]


def _is_optimizer(name: str) -> bool:
    last = name.rsplit(".", 1)[-1].lower()
    table = mp_table()
    return any(h in last for h in table["optimizer_hints"]) and not any(h in last for h in table["scheduler_hints"])


class GradScalerHalfway(Rule):
    code = "ACL613"
    name = "grad-scaler-halfway"
    category = "mixed-precision"
    severity = "warning"
    # Stable by declaration: a protocol error the code itself shows, right wherever its premises are proven;
    # the tuning corpus holds no proven finding of it to measure (benchmarks/precision/).
    maturity = "stable"
    summary = ("A GradScaler used halfway: scaled gradients stepped by the optimizer itself, the optimizer stepped "
               "twice in one iteration, or step() without update()")
    doc = RuleDoc(
        what="Reports, for a `GradScaler` of this file, a plain `optimizer.step()` in the function that calls "
        "`scaler.scale(loss).backward()` when the scaler never steps (`scaler.step(optimizer)` appears nowhere in "
        "the file), also after `scaler.unscale_(optimizer)`, which unscales but does not skip overflowed steps; a plain `optimizer.step()` in the same pass of the function as `scaler.step(optimizer)` (the "
        "optimizer stepped twice per iteration, in either order, when the plain step is under no `if` of its own "
        "or under the same test as the scaler's); and `scaler.step(optimizer)` when `scaler.update()` appears nowhere in the file. A scaler built "
        "with `enabled=False` is left alone.",
        why="`scaler.scale(loss)` multiplies the loss by the scale (65536 at the start), so every gradient is 65536x "
        "too large. `scaler.step(optimizer)` divides them back, checks them for inf/NaN and skips the step when it "
        "finds any; a plain `optimizer.step()` applies the scaled gradients as they are (SGD takes 65536x steps; "
        "Adam hides the factor except through epsilon and weight decay) and applies overflowed steps too. Without "
        "`scaler.update()` the scale never adapts, and the second `scaler.step()` raises \"step() has already been "
        "called since the last update()\". A second `optimizer.step()` after `scaler.step(optimizer)` applies "
        "every update twice (SGD: twice the learning rate; Adam: two moment updates per batch) and, on an "
        "iteration whose gradients overflowed, applies the inf/NaN gradients the scaler skipped: the weights "
        "become NaN. Either way the run differs from a GPU run that follows the protocol.",
        fix="Follow the protocol each step: `scaler.scale(loss).backward()`, optionally `scaler.unscale_(optimizer)` "
        "before clipping, then `scaler.step(optimizer)` and `scaler.update()`.",
        references=("nerfstudio-project/nerfacc#307 (a GradScaler used only to scale the loss: gradients 1024x too "
                    "large at the update)",
                    "docs/knowledge/mixed-precision.md#one-optimizer-step-per-scaler-step",
                    "PyTorch AMP examples, docs.pytorch.org/docs/stable/notes/amp_examples.html"),
    )
    invalid = (
        Example.script("""
            import torch

            model = torch.nn.Linear(8, 1).cuda()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.amp.GradScaler("cuda")
            for x in [torch.randn(4, 8).cuda()]:
                with torch.autocast("cuda", dtype=torch.float16):
                    loss = model(x).pow(2).mean()
                scaler.scale(loss).backward()
                optimizer.step()  # expect: ACL613
                optimizer.zero_grad()
        """, "the loss is scaled, the optimizer steps the scaled gradients itself"),
        Example.script("""
            import torch


            class Trainer:
                def __init__(self, model):
                    self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
                    self.scaler = torch.cuda.amp.GradScaler()

                def train_step(self, loss):
                    self.scaler.scale(loss).backward()
                    self.scaler.step(self.optimizer)  # expect: ACL613
                    self.optimizer.zero_grad()
        """, "the scaler steps but its scale is never updated"),
        Example.script("""
            import torch

            model = torch.nn.Linear(8, 1).cuda()
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
            scaler = torch.amp.GradScaler("cuda")
            for x in [torch.randn(4, 8).cuda()]:
                with torch.autocast("cuda", dtype=torch.float16):
                    loss = model(x).pow(2).mean()
                optimizer.zero_grad()
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                optimizer.step()  # expect: ACL613
        """, "the optimizer stepped twice per iteration: by the scaler, then by itself"),
        Example.script("""
            import torch

            model = torch.nn.Linear(8, 1).cuda()
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
            scaler = torch.amp.GradScaler("cuda")
            for x in [torch.randn(4, 8).cuda()]:
                with torch.autocast("cuda", dtype=torch.float16):
                    loss = model(x).pow(2).mean()
                scaler.scale(loss).backward()
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()  # expect: ACL613
                scaler.update()
                optimizer.zero_grad()
        """, "unscaled by hand, then stepped without the scaler's inf/NaN check"),
    )
    valid = (
        Example.script("""
            import torch

            model = torch.nn.Linear(8, 1).cuda()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.amp.GradScaler("cuda")
            for x in [torch.randn(4, 8).cuda()]:
                with torch.autocast("cuda", dtype=torch.float16):
                    loss = model(x).pow(2).mean()
                scaler.scale(loss).backward()
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
        """, "the whole protocol"),
        Example.script("""
            import torch


            def step(model, optimizer, scaler, loss, use_amp):
                if use_amp:
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    loss.backward()
                    optimizer.step()
        """, "a plain step on the branch without a scaler"),
        Example.script("""
            import torch

            model = torch.nn.Linear(8, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.amp.GradScaler("cpu", enabled=False)
            loss = model(torch.randn(4, 8)).sum()
            scaler.scale(loss).backward()
            optimizer.step()
        """, "a disabled scaler returns the loss unscaled"),
    )

    def check_file(self, ctx: FileContext) -> None:
        facts = ctx.facts
        for name, enabled in _scalers(facts).items():
            if not enabled:
                continue
            scales = _calls_on(facts, name, "scale")
            steps = _calls_on(facts, name, "step")
            if scales and not steps:
                unscales = _calls_on(facts, name, "unscale_")
                for call in self._plain_steps(facts, scales):
                    ctx.report(self, call.node, _unchecked_step_message(name, call, _unscaled_before(unscales, call)),
                               fix=f"{name}.step({_text(receiver(call))}); {name}.update()")
            for plain, scaled in self._double_steps(facts, steps):
                ctx.report(self, plain.node, _double_step_message(facts, name, plain, scaled),
                           fix=f"remove `{plain.callee}()`: `{name}.step(...)` already steps the optimizer",
                           premises=(_same_iteration(facts, plain, scaled),))
            if steps and not _calls_on(facts, name, "update"):
                ctx.report(self, steps[0].node, f"`{name}.step()` with no `{name}.update()` in this file: the loss "
                           "scale never adapts, and a second step() before update() raises RuntimeError.",
                           fix=f"{name}.update() after {name}.step(...)")

    @staticmethod
    def _plain_steps(facts: FileFacts, scales: list) -> Iterator[Call]:
        scopes = {c.scope for c in scales}
        first = min(c.order for c in scales)
        for call in calls_with_method(facts, ("step",)):
            name = _text(receiver(call))
            if call.scope in scopes and call.order > first and name and _is_optimizer(name) and not call.args:
                yield call

    @staticmethod
    def _double_steps(facts: FileFacts, steps: list) -> Iterator[tuple]:
        """(plain `optimizer.step()`, the `scaler.step(optimizer)` of the same optimizer) run in one pass of
        the same function: not on the two sides of one `if`, and both in its loop or both outside it."""
        for scaled in steps:
            stepped = scaled.arg("optimizer", 0)
            name = _text(stepped.value) if stepped is not None else ""
            if not name:
                continue
            for plain in _calls_on(facts, name, "step"):
                if plain.args or plain.scope != scaled.scope or plain.in_loop != scaled.in_loop \
                        or not _runs_with(plain, scaled):
                    continue
                yield plain, scaled


def _unscaled_before(unscales: list, call: Call) -> bool:
    """`scaler.unscale_(optimizer)` runs before `call` in its function."""
    return any(u.scope == call.scope and u.order < call.order for u in unscales)


def _unchecked_step_message(scaler: str, call: Call, unscaled: bool) -> str:
    if unscaled:
        return (f"`{scaler}.unscale_(...)` divided the gradients back, but `{call.callee}()` steps without "
                f"`{scaler}.step(...)`, which is what checks them for inf/NaN: on an iteration whose scaled "
                "gradients overflowed (the scale starts at 65536 and doubles every 2000 clean steps until one "
                "does) the scaler would skip the step; this one applies the inf/NaN gradients and the weights "
                "become NaN.")
    return (f"`{scaler}.scale(loss)` scaled the gradients (by 65536 at the start) but `{call.callee}()` applies "
            f"them unscaled and unchecked for inf/NaN: `{scaler}.step(...)` unscales, checks and skips overflowed "
            "steps.")


def _runs_with(plain: Call, scaled: Call) -> bool:
    """`plain` runs whenever `scaled` does: it is under no `if` of its own in the function, or under the same
    test on the same side. The two sides of one `if`/`else`, or a plain step under another test (the branch
    without a scaler, a step skipped when the norm is not finite), are not known to run together."""
    return plain.guard is None or plain.guard == scaled.guard


def _line(facts: FileFacts, call: Call) -> str:
    return f"{facts.path}:{facts.spans[call.node].line}"


def _double_step_message(facts: FileFacts, scaler: str, plain: Call, scaled: Call) -> str:
    first = "after" if plain.order > scaled.order else "before"
    return (f"`{plain.callee}()` steps the optimizer a second time in the iteration, {first} `{scaler}.step(...)` at "
            f"{_line(facts, scaled)}: every update is applied twice (twice the learning rate for SGD, two moment "
            "updates for Adam), and on an iteration where the scaler found inf/NaN and skipped its step, this "
            + ("step applies the inf/NaN gradients anyway." if first == "after" else
               "step applies gradients still multiplied by the loss scale (65536 at the start)."))


def _same_iteration(facts: FileFacts, plain: Call, scaled: Call) -> Premise:
    where = "the loop body" if plain.in_loop else "the body"
    guard = "under no `if` of its own" if plain.guard is None else "under the same test"
    return Premise("value", True, f"`{plain.callee}()` at {_line(facts, plain)} and `{scaled.callee}(...)` at "
                   f"{_line(facts, scaled)} run in {where} of `{plain.scope}`, the plain step {guard}")


def _custom_amp_device(facts: FileFacts, call: Call) -> Optional[str]:
    """"cuda" when an AMP decorator call (or `partial(torch.amp.custom_fwd, ...)`) tests CUDA autocast."""
    names = call.names
    if names & mp_names("cuda_custom_amp_decorators"):
        return "cuda"
    if names & mp_names("partial_calls"):
        first = call.arg("func", 0)
        if first is None or not first.value.names & mp_names("custom_amp_decorators"):
            return None
    elif not names & mp_names("custom_amp_decorators"):
        return None
    arg = call.arg("device_type")
    if arg is None:
        return None
    literal = value_of(facts, arg.value, call).literal
    return "cuda" if isinstance(literal, str) and literal.split(":")[0] == "cuda" else None


class CustomAmpCudaOnNpu(Rule):
    code = "ACL614"
    name = "custom-fwd-cuda-on-npu"
    category = "mixed-precision"
    severity = "warning"
    maturity = "preview"
    summary = "custom_fwd / custom_bwd tied to CUDA autocast in a program that runs on NPU"
    doc = RuleDoc(
        what="Reports, in a program that uses torch_npu and does not load `torch_npu.contrib.transfer_to_npu`, the "
        "AMP decorators of custom autograd Functions that test CUDA autocast: `torch.amp.custom_fwd` / "
        "`custom_bwd` with `device_type=\"cuda\"` (also through `functools.partial`), and the `torch.cuda.amp` "
        "forms, used bare or called.",
        why="`custom_fwd(device_type='cuda', cast_inputs=torch.float32)` asks whether **CUDA** autocast is on; in "
        "an NPU run it is not (NPU autocast is), so the inputs are not cast to fp32 and autocast is not switched "
        "off inside the forward: the Function computes in bf16/fp16 on NPU and in fp32 on GPU. `custom_bwd` "
        "likewise runs the backward outside the autocast state the forward saw. ACL603 covers `autocast` itself.",
        fix="Name the device the run is on: `device_type=torch.accelerator.current_accelerator().type` (torch >= "
        "2.6), or `'npu'` in NPU code.",
        references=("NVIDIA/Megatron-LM#7422 (custom_fwd/custom_bwd fixed to 'cuda': the AMP cast guard is "
                    "disabled on Ascend NPU)",
                    "kornia/kornia#4624 (cast_inputs=float32 not applied on Ascend 910B with device_type='cuda')"),
    )
    invalid = (
        Example({
            "train.py": """
                import torch
                import torch_npu

                from layers import ScaledSoftmax

                if __name__ == "__main__":
                    model = torch.nn.Linear(8, 8).npu()
                    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                    with torch.autocast("npu", dtype=torch.bfloat16):
                        loss = ScaledSoftmax.apply(model(torch.randn(4, 8).npu())).sum()
                    loss.backward()
                    optimizer.step()
            """,
            "layers.py": """
                import torch


                class ScaledSoftmax(torch.autograd.Function):
                    @staticmethod
                    @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)  # expect: ACL614
                    def forward(ctx, x):
                        out = torch.softmax(x, dim=-1)
                        ctx.save_for_backward(out)
                        return out

                    @staticmethod
                    @torch.cuda.amp.custom_bwd
                    def backward(ctx, grad):  # expect: ACL614
                        (out,) = ctx.saved_tensors
                        return out * (grad - (grad * out).sum(-1, keepdim=True))
            """,
        }, "a Function written for CUDA autocast, trained on NPU"),
        Example.script("""
            from functools import partial

            import torch
            import torch_npu

            custom_fwd = partial(torch.amp.custom_fwd, device_type="cuda")  # expect: ACL614

            if __name__ == "__main__":
                torch.nn.Linear(2, 1).npu()(torch.ones(2).npu()).sum().backward()
        """, "a partial fixed to cuda"),
    )
    valid = (
        Example.script("""
            import torch
            import torch_npu


            class Scale(torch.autograd.Function):
                @staticmethod
                @torch.amp.custom_fwd(device_type="npu", cast_inputs=torch.float32)
                def forward(ctx, x):
                    return x * 2

                @staticmethod
                @torch.amp.custom_bwd(device_type="npu")
                def backward(ctx, grad):
                    return grad * 2


            if __name__ == "__main__":
                Scale.apply(torch.ones(2, requires_grad=True).npu()).sum().backward()
        """, "the NPU device type"),
        Example.script("""
            import torch
            import torch_npu
            from torch_npu.contrib import transfer_to_npu


            class Scale(torch.autograd.Function):
                @staticmethod
                @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)
                def forward(ctx, x):
                    return x * 2


            if __name__ == "__main__":
                Scale.apply(torch.ones(2, requires_grad=True).cuda()).sum().backward()
        """, "transfer_to_npu maps cuda to NPU: not judged"),
        Example.script("""
            import torch


            class Scale(torch.autograd.Function):
                @staticmethod
                @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)
                def forward(ctx, x):
                    return x * 2


            if __name__ == "__main__":
                Scale.apply(torch.ones(2, requires_grad=True).cuda()).sum().backward()
        """, "a GPU program"),
        Example.script("""
            import torch
            import torch_npu


            class OffloadCheckpoint(torch.autograd.Function):
                @staticmethod
                @torch.cuda.amp.custom_fwd
                def forward(ctx, run, x):
                    ctx.save_for_backward(x.to("cpu"))
                    ctx.run = run
                    with torch.no_grad():
                        return run(x)

                @staticmethod
                @torch.cuda.amp.custom_bwd
                def backward(ctx, grad):
                    (x,) = ctx.saved_tensors
                    x = x.to("cuda").requires_grad_(True)
                    with torch.enable_grad():
                        torch.autograd.backward(ctx.run(x), grad)
                    return None, x.grad


            if __name__ == "__main__":
                model = torch.nn.Linear(2, 2).npu()
                OffloadCheckpoint.apply(model, torch.ones(2).npu()).sum().backward()
        """, "a CUDA-only Function (it moves tensors to 'cuda' by name): it cannot run on NPU as written"),
    )

    def check_program(self, ctx: ProgramContext) -> None:
        files = ctx.program.files
        if not runs_on_npu_untranslated(files):
            return
        bare = mp_names("cuda_custom_amp_decorators")
        for facts in files:
            for call in calls_named(facts, bare | mp_names("custom_amp_decorators") | mp_names("partial_calls")):
                if _custom_amp_device(facts, call) == "cuda" and not _names_cuda_device(facts, call.scope):
                    ctx.report(self, facts, call.node, self._message(call), fix=_FIX)
            for function in facts.functions.values():
                if _names_cuda_device(facts, function.owner):
                    continue
                for decorator in function.decorators:
                    if decorator.names & bare and not decorator.base_call:  # `@torch.cuda.amp.custom_fwd`
                        ctx.report(self, facts, function.node, f"`@{decorator.dotted}` on `{function.qualname}` "
                                   "tests CUDA autocast: in this NPU program it never casts and never "
                                   "restores the forward's autocast state.", fix=_FIX)

    @staticmethod
    def _message(call: Call) -> str:
        cast = call.arg("cast_inputs") is not None
        what = ("so `cast_inputs` never applies: the Function computes in the NPU autocast dtype where the GPU "
                "run computes in fp32" if cast else
                "so on NPU it neither casts nor carries the forward's autocast state into the backward")
        return f"`{call.callee}` tests CUDA autocast (device_type 'cuda'), which is never on in this NPU program, {what}."


_FIX = "device_type=torch.accelerator.current_accelerator().type (or 'npu')"


def _names_cuda_device(facts: FileFacts, owner: Optional[str]) -> bool:
    """The class `owner` moves tensors to the CUDA device by name (`.cuda()`, `.to("cuda")`, `device="cuda"`):
    CUDA-only code, which fails on an NPU (or runs under transfer_to_npu) before its autocast matters."""
    if not owner or owner not in facts.classes:
        return False
    inside = owner + "."
    for call in facts.calls:
        if call.scope != owner and not call.scope.startswith(inside):
            continue
        if call.method == "cuda" and not call.names:
            return True
        device = call.arg("device") if call.method != "to" else call.arg("device", 0)
        if device is not None and isinstance(device.value.literal, str) and device.value.literal.startswith("cuda"):
            return True
    return False


def _is_scheduler(name: str) -> bool:
    last = name.rsplit(".", 1)[-1].lower()
    return any(h in last for h in mp_table()["scheduler_hints"])


class SchedulerStepsSkippedSteps(Rule):
    code = "ACL621"
    name = "scheduler-steps-skipped-steps"
    category = "mixed-precision"
    severity = "info"
    maturity = "preview"
    summary = "An LR scheduler stepped every iteration beside scaler.step(), which may have skipped the optimizer step"
    doc = RuleDoc(
        what="Reports `scheduler.step()` in the same pass of the same function (both in its loop, or both outside "
        "it, not on the two sides of one `if`) as `scaler.step(optimizer)` of an enabled `GradScaler`, when the "
        "function never asks whether the step was skipped (`scaler.get_scale()` compared before and after "
        "`update()`). It is PyTorch's documented AMP recipe, so the finding is `info`: it names why the two sides' "
        "schedules may drift apart, not a mistake.",
        why="`scaler.step(optimizer)` skips `optimizer.step()` when the scaled gradients hold inf/NaN: several times "
        "at the start while the scale falls from 65536 to one that fits, then about once per `growth_interval` = "
        "2000 clean steps when it doubles back into overflow. The scheduler advances anyway, so after k skipped "
        "steps the learning rate is the schedule's value k steps ahead (PyTorch warns \"Detected call of "
        "`lr_scheduler.step()` before `optimizer.step()`\" when the first step is skipped). With k = 5 in a "
        "1,000-step linear warmup that is 0.5% of the peak rate, and a cosine schedule ends k steps early. A "
        "float16 GPU run skips steps where a bfloat16 NPU run (no loss scaling) skips none, so their schedules "
        "differ by k steps: small, and usually immaterial (michuanhaohao/reid-strong-baseline#190).",
        fix="Step the scheduler only when the optimizer stepped: `scale = scaler.get_scale(); scaler.step(opt); "
        "scaler.update(); if scaler.get_scale() >= scale: scheduler.step()` (accelerate: "
        "`if not accelerator.optimizer_step_was_skipped`).",
        references=("docs/knowledge/mixed-precision.md#schedulers-beside-skipped-steps",
                    "PyTorch AMP examples, docs.pytorch.org/docs/stable/notes/amp_examples.html",
                    "PyTorch optim docs, docs.pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                    "michuanhaohao/reid-strong-baseline#190 (the warning: \"does not influence the performance "
                    "a lot\")"),
    )
    invalid = (
        Example.script("""
            import torch

            model = torch.nn.Linear(8, 1).cuda()
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
            scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.01, total_iters=1000)
            scaler = torch.amp.GradScaler("cuda")
            for x in [torch.randn(4, 8).cuda()]:
                with torch.autocast("cuda", dtype=torch.float16):
                    loss = model(x).pow(2).mean()
                optimizer.zero_grad()
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                scheduler.step()  # expect: ACL621
        """, "the documented recipe: the warmup advances on the steps the scaler skipped"),
    )
    valid = (
        Example.script("""
            import torch

            model = torch.nn.Linear(8, 1).cuda()
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
            scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.01, total_iters=1000)
            scaler = torch.amp.GradScaler("cuda")
            for x in [torch.randn(4, 8).cuda()]:
                with torch.autocast("cuda", dtype=torch.float16):
                    loss = model(x).pow(2).mean()
                optimizer.zero_grad()
                scaler.scale(loss).backward()
                scale = scaler.get_scale()
                scaler.step(optimizer)
                scaler.update()
                if scaler.get_scale() >= scale:
                    scheduler.step()
        """, "the scheduler steps only when the optimizer did"),
        Example.script("""
            import torch

            model = torch.nn.Linear(8, 1).cuda()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30)
            scaler = torch.amp.GradScaler("cuda")
            for epoch in range(90):
                for x in [torch.randn(4, 8).cuda()]:
                    with torch.autocast("cuda", dtype=torch.float16):
                        loss = model(x).pow(2).mean()
                    optimizer.zero_grad()
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()
            scheduler.step()
        """, "a per-epoch schedule does not count optimizer steps"),
    )

    def check_file(self, ctx: FileContext) -> None:
        facts = ctx.facts
        for name, enabled in _scalers(facts).items():
            if not enabled:
                continue
            asked = {c.scope for c in _calls_on(facts, name, "get_scale")}
            for scaled in _calls_on(facts, name, "step"):
                if scaled.scope in asked:
                    continue
                for call in calls_with_method(facts, ("step",)):
                    stepped = _text(receiver(call))
                    if (stepped and _is_scheduler(stepped) and not _is_optimizer(stepped) and call.scope == scaled.scope
                            and call.in_loop == scaled.in_loop and _runs_with(call, scaled)):
                        ctx.report(self, call.node, _skipped_schedule_message(name, call, facts, scaled),
                                   fix=f"step `{stepped}` only when `{name}.get_scale()` did not fall")


def _skipped_schedule_message(scaler: str, call: Call, facts: FileFacts, scaled: Call) -> str:
    return (f"`{call.callee}()` runs on every iteration that `{scaler}.step(...)` at {_line(facts, scaled)} runs, "
            "including those where it skipped the optimizer step (inf/NaN gradients: the first few while the scale "
            "falls from 65536, then about one per 2000 steps): after k skips the learning rate is the schedule's "
            "value k steps ahead (k = 5 in a 1,000-step warmup: 0.5% of the peak), and a bf16 side without loss "
            "scaling skips none.")


RULES = [GradScalerHalfway(), CustomAmpCudaOnNpu(), SchedulerStepsSkippedSteps()]
