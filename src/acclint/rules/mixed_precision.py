"""Category `mixed-precision`: fp16 needs loss scaling (Ascend's fp16-only kernels make fp16 common
there), and autocast and the scaler must name the device the run is on (docs/knowledge/mixed-precision.md).
The float32 precision switches (TF32, HF32) are in float32_precision.py."""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from acclint.findings import Premise
from acclint.knowledge import table
from acclint.linter.context import FileContext, ProgramContext
from acclint.linter.facts import Call, FileFacts, Value
from acclint.linter.frameworks import program_loads_transfer_to_npu
from acclint.linter.rulebase import Example, Rule, RuleDoc
from acclint.rules.grad_reach import UNREACHED, region_reach, with_region
from acclint.rules.flow import calls_named, calls_with_method, mentions_any, receiver, value_of

_NPU_PREFIXES = ("torch_npu", "torch.npu", "mindspeed")


@lru_cache(maxsize=1)
def mp_table() -> dict:
    return table("mixed_precision")


def mp_names(key: str) -> frozenset:
    return frozenset(mp_table()[key])


def _is_fp16(value: Value) -> bool:
    if value.names & mp_names("fp16_dtypes"):
        return True
    if isinstance(value.literal, str) and value.literal.lower() in mp_table()["fp16_strings"]:
        return True
    dotted = value.dotted or ""
    return dotted.rsplit(".", 1)[-1] in ("float16", "half") and "." in dotted


def _literal_str(facts: FileFacts, value: Value, call: Call) -> Optional[str]:
    literal = value_of(facts, value, call).literal
    return literal if isinstance(literal, str) else None


def _autocast_device(facts: FileFacts, call: Call) -> Optional[str]:
    """The device an autocast call names: from its qualified name or its `device_type` argument."""
    for prefix, device in (("torch.cuda.", "cuda"), ("torch.npu.", "npu"), ("torch.cpu.", "cpu")):
        if any(n.startswith(prefix) for n in call.names):
            return device
    arg = call.arg("device_type", 0)
    if arg is None:
        return None
    text = _literal_str(facts, arg.value, call)
    return text.split(":")[0] if text else None


def _enabled_autocasts(facts: FileFacts):
    """Autocast calls of the file, less those a literal `enabled=False` switches off (a region kept in fp32)."""
    for call in calls_named(facts, mp_names("autocasts")):
        enabled = call.arg("enabled")
        if enabled is None or enabled.value.literal is not False:
            yield call


def _fp16_autocasts(facts: FileFacts) -> list:
    found = []
    for call in _enabled_autocasts(facts):
        dtype = call.arg("dtype")
        if dtype is not None:
            if _is_fp16(value_of(facts, dtype.value, call)):
                found.append(call)
        elif _autocast_device(facts, call) in mp_table()["fp16_default_devices"]:
            found.append(call)
    return found


_MODEL_HINTS = ("model", "net", "module")


def _half_models(facts: FileFacts) -> list:
    """`model.half()` / `model.to(torch.float16)`: a whole network cast to fp16."""
    found = []
    for call in calls_with_method(facts, ("half", "to")):
        if call.names:
            continue
        target = receiver(call)
        name = (target.dotted or target.base or "") if target is not None else ""
        constructor = target is not None and target.base_call and not target.chain and \
            target.base.rsplit(".", 1)[-1][:1].isupper()  # `Net(...).half()`
        looks_like_model = any(h in name.rsplit(".", 1)[-1].lower() for h in _MODEL_HINTS) or constructor
        if not looks_like_model:
            continue
        if call.method == "half" or any(_is_fp16(a.value) for a in call.args if a.keyword in (None, "dtype")):
            found.append(call)
    return found


def _apex_unscaled(facts: FileFacts) -> list:
    """apex `amp.initialize` whose opt_level leaves the loss unscaled (O3 default, or loss_scale=1)."""
    found = []
    defaults = mp_table()["apex_default_scale"]
    for call in calls_named(facts, mp_names("apex_initialize")):
        level = call.arg("opt_level")
        level_text = level.value.literal if level is not None else "O1"
        scale = call.arg("loss_scale")
        if scale is not None:
            if scale.value.literal in (1, 1.0):
                found.append(call)
        elif defaults.get(level_text) == "1.0":
            found.append(call)
    return found


_SCALER_NAMES = ("lossscaler", "gradscaler", "loss_scaler", "grad_scaler")


def _has_scaler(facts: FileFacts) -> bool:
    if calls_named(facts, mp_names("scalers")):
        return True
    # A framework's own scaler (Megatron DynamicGradScaler, an FP16_Optimizer's DynamicLossScaler).
    if any(any(h in (imp.name or imp.module).lower() for h in _SCALER_NAMES) for imp in facts.imports):
        return True
    hints = tuple(mp_table()["scaler_receiver_hints"])
    for call in calls_with_method(facts, mp_table()["scaler_methods"]):
        target = receiver(call)
        text = ((target.dotted or target.base or "") if target is not None else "").lower()
        if any(h in text for h in hints):
            return True
    keywords = frozenset(mp_table()["scale_keywords"])
    return any(a.keyword in keywords for c in facts.calls for a in c.args) or _loss_times_scale(facts, hints)


def _loss_times_scale(facts: FileFacts, hints: tuple) -> bool:
    """A value multiplied by a loss scale (`scaled = loss * self.loss_scale`), or a loss handed to an
    object named as a scaler (`loss_scaler(loss, optimizer)`): the file scales by hand."""
    for assignment in facts.name_assignments:
        value = assignment.value
        if value.op == "*" and any(any(h in (o.dotted or "").lower() for h in hints) for o in value.operands):
            return True
    return any(call.args and any(h in call.callee.rsplit(".", 1)[-1].lower() for h in hints)
               for call in facts.calls if not call.callee.startswith("?"))


def _is_test_file(facts: FileFacts) -> bool:
    """Unit tests compare a layer's fp16 outputs and grads; they are not training runs."""
    name = facts.path.rsplit("/", 1)[-1]
    return name.startswith("test_") or name.endswith("_test.py")


def _calls_backward(facts: FileFacts) -> bool:
    """Autograd's own backward: `loss.backward()` or `torch.autograd.backward(...)`.

    `optimizer.backward(loss)`, `accelerator.backward(loss)`, `engine.backward(loss)` hand the loss
    to an object whose class owns the scaling (fairseq's AMPOptimizer, accelerate, DeepSpeed), often
    defined in another module; this file does not decide whether the loss is scaled.
    """
    return any(call.callee == "torch.autograd.backward" or not _passes_loss(call)
               for call in calls_with_method(facts, ("backward",)))


def _passes_loss(call: Call) -> bool:
    return call.arg("", 0) is not None


class Fp16WithoutLossScaling(Rule):
    code = "ACL601"
    name = "fp16-without-loss-scaling"
    category = "mixed-precision"
    severity = "warning"
    summary = "fp16 training (autocast float16, `.half()`, apex O3 / loss_scale=1) with backward() and no loss scaler"
    doc = RuleDoc(
        what="Reports fp16 mixed precision in a file that calls autograd's `loss.backward()` and never scales the loss "
        "(a loss handed to an object, `optimizer.backward(loss)`, is that object's to scale): "
        "`torch.autocast(..., dtype=torch.float16)` (or a cuda/npu autocast, whose default dtype is float16), "
        "`model.half()`, apex `amp.initialize` with `opt_level='O3'` or `loss_scale=1`, when no `GradScaler` "
        "(torch.amp / torch.cuda.amp / torch.npu.amp), apex `amp.scale_loss` or other scaler appears.",
        why="fp16 represents nothing below 6e-8 (subnormals from 6e-8, normal range from 6.1e-5) and nothing above "
        "65504. Unscaled gradients underflow to zero and activations overflow to inf. On GPUs bf16 often hides "
        "this; on Ascend fp16 is the common low precision (Conv/MatMul kernels are fp16-only on the Atlas "
        "training series) and the NPU guides make loss scaling standard. GradScaler starts at 2**16 = 65536.",
        fix="Wrap the step in a scaler: `scaler = torch.amp.GradScaler('npu')` (or 'cuda'), "
        "`scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update()`; or train in bf16.",
        references=("docs/knowledge/mixed-precision.md#fp16-only-ops", "docs/knowledge/mixed-precision.md#loss-scaling-and-autocast"),
    )
    invalid = (
        Example.script("""
            import torch
            import torch_npu

            model = torch.nn.Linear(8, 8).npu()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for x in [torch.randn(4, 8).npu()]:
                with torch.autocast(device_type="npu", dtype=torch.float16):  # expect: ACL601
                    loss = model(x).pow(2).mean()
                loss.backward()
                optimizer.step()
        """, "fp16 autocast on NPU without a GradScaler"),
        Example.script("""
            import torch
            from apex import amp

            model = torch.nn.Linear(8, 8).npu()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            model, optimizer = amp.initialize(model, optimizer, opt_level="O3")  # expect: ACL601
            loss = model(torch.randn(4, 8).npu()).sum()
            loss.backward()
        """, "apex O3: no loss scaling by default"),
    )
    valid = (
        Example.script("""
            import torch
            import torch_npu

            model = torch.nn.Linear(8, 8).npu()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.npu.amp.GradScaler()
            for x in [torch.randn(4, 8).npu()]:
                with torch.autocast(device_type="npu", dtype=torch.float16):
                    loss = model(x).pow(2).mean()
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
        """, "fp16 with a scaler"),
        Example.script("""
            import torch

            model = torch.nn.Linear(8, 8).npu()
            with torch.autocast(device_type="npu", dtype=torch.bfloat16):
                loss = model(torch.randn(4, 8).npu()).sum()
            loss.backward()
        """, "bf16 needs no scaler"),
        Example.script("""
            import torch
            from .loss_scaler import DynamicLossScaler


            class FP16Module(torch.nn.Module):
                def __init__(self, module):
                    super().__init__()
                    self.add_module("module", module.half())


            class FP16Optimizer:
                def __init__(self, optimizer):
                    self.loss_scaler = DynamicLossScaler()

                def backward(self, loss):
                    (loss.float() * self.loss_scaler.loss_scale).backward()
        """, "a framework's own fp16 optimizer with its loss scaler"),
        Example.script("""
            import torch


            def export(model):
                model.half().eval()
                return model
        """, "fp16 without training"),
        Example.script("""
            import torch


            def train_step(model, optimizer, batch):
                with torch.autocast(device_type="cuda", dtype=torch.float16):
                    loss = model(batch).mean()
                optimizer.backward(loss)  # the wrapper's class scales the loss, in another module
                optimizer.step()
        """, "the loss handed to an object's backward(loss), which owns the scaling"),
        Example.script("""
            import torch
            from timm.utils import NativeScaler

            model = torch.nn.Linear(8, 8).npu()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            loss_scaler = NativeScaler()
            for x in [torch.randn(4, 8).npu()]:
                with torch.autocast(device_type="npu", dtype=torch.float16):
                    loss = model(x).pow(2).mean()
                if loss_scaler is not None:
                    loss_scaler(loss, optimizer)  # timm's NativeScaler owns a GradScaler
                else:
                    loss.backward()
                    optimizer.step()
        """, "a library's scaler object the loss is handed to (timm NativeScaler)"),
        Example.script("""
            import torch


            class Fp16Hook:
                def __init__(self, loss_scale=512.0):
                    self.loss_scale = loss_scale

                def after_train_iter(self, runner):
                    runner.model.half()
                    scaled_loss = runner.outputs["loss"] * self.loss_scale
                    scaled_loss.backward()
                    runner.optimizer.step()
        """, "the loss multiplied by a static loss scale before backward (an fp16 optimizer hook)"),
        Example.script("""
            import torch
            from apex.optimizers import FP16_Optimizer

            model = torch.nn.Linear(8, 8).npu()
            model.half()
            optimizer = FP16_Optimizer(torch.optim.SGD(model.parameters(), lr=0.1), dynamic_loss_scale=True)
            loss = model(torch.randn(4, 8).npu().half()).sum()
            if optimizer is not None:
                optimizer.backward(loss)
            else:
                loss.backward()
        """, "apex's FP16_Optimizer scales the loss it is handed"),
    )

    def check_file(self, ctx: FileContext) -> None:
        facts = ctx.facts
        if _is_test_file(facts) or not _calls_backward(facts) or _has_scaler(facts):
            return
        sites = sorted(_fp16_autocasts(facts) + _half_models(facts) + _apex_unscaled(facts), key=lambda c: c.order)
        for call in sites[:1]:  # one finding per file: the missing scaler is one omission
            what = ("apex amp with no loss scaling" if call.names & mp_names("apex_initialize")
                    else "the model cast to fp16" if call.method in ("half", "to") else "fp16 autocast")
            ctx.report(self, call.node, f"{what} and `backward()` in this file, but no loss scaler: fp16 "
                       "gradients below 6e-8 flush to zero and values above 65504 overflow.",
                       fix="scaler = torch.amp.GradScaler(); scaler.scale(loss).backward(); scaler.step(opt); "
                       "scaler.update() (or use bf16)")


class MindSporeFp16WithoutLossScale(Rule):
    code = "ACL602"
    name = "mindspore-fp16-without-loss-scale"
    category = "mixed-precision"
    severity = "warning"
    summary = "MindSpore fp16 network trained without a loss scale"
    doc = RuleDoc(
        what="Reports a MindSpore network cast to fp16 (`to_float(mindspore.float16)`, `auto_mixed_precision` "
        "at O2/O3, `Model(..., amp_level='O3')`, `build_train_network(level='O3')`) trained without loss scaling: "
        "with `nn.TrainOneStepCell` (which never scales), or with O3 and no `loss_scale_manager`.",
        why="MindSpore's `build_train_network` adds a `DynamicLossScaleManager` only at O2; O3 and hand-built "
        "`TrainOneStepCell` pipelines train fp16 unscaled (MindSpore train/amp.py `_config_level`). fp16 gradients "
        "below 6e-8 flush to zero. The migration guide recommends loss scaling as standard on Ascend, where "
        "Conv/MatMul/Sort/TopK run in fp16 on the Atlas training series.",
        fix="Use `nn.TrainOneStepWithLossScaleCell(net, opt, scale_sense=nn.DynamicLossScaleUpdateCell(2**24, 2, "
        "1000))`, or `Model(..., loss_scale_manager=DynamicLossScaleManager())`, or amp_level='O2'.",
        references=("docs/knowledge/mixed-precision.md#loss-scaling-and-autocast",),
    )
    invalid = (
        Example.script("""
            import mindspore as ms
            from mindspore import nn

            net = nn.Dense(8, 8)
            net.to_float(ms.float16)
            loss_net = nn.WithLossCell(net, nn.MSELoss())
            optimizer = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
            train_net = nn.TrainOneStepCell(loss_net, optimizer)  # expect: ACL602
            train_net.set_train()
            for data, label in [(ms.ops.ones((4, 8)), ms.ops.ones((4, 8)))]:
                train_net(data, label)
        """, "a TrainOneStepCell pipeline in fp16"),
        Example.script("""
            from mindspore import nn
            from mindspore.train import Model

            net = nn.Dense(8, 8)
            opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
            model = Model(net, loss_fn=nn.MSELoss(), optimizer=opt, amp_level="O3")  # expect: ACL602
        """, "Model at O3 without a loss scale manager"),
    )
    valid = (
        Example.script("""
            import mindspore as ms
            from mindspore import nn

            net = nn.Dense(8, 8)
            net.to_float(ms.float16)
            loss_net = nn.WithLossCell(net, nn.MSELoss())
            optimizer = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
            scale = nn.DynamicLossScaleUpdateCell(loss_scale_value=2**24, scale_factor=2, scale_window=1000)
            train_net = nn.TrainOneStepWithLossScaleCell(loss_net, optimizer, scale_sense=scale)
            train_net.set_train()
        """, "loss-scaled training cell"),
        Example.script("""
            from mindspore import nn
            from mindspore.train import Model

            net = nn.Dense(8, 8)
            opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
            model = Model(net, loss_fn=nn.MSELoss(), optimizer=opt, amp_level="O2")
        """, "O2 adds a dynamic loss scale by itself"),
    )

    def check_file(self, ctx: FileContext) -> None:
        facts = ctx.facts
        levels, self_scaled = mp_table()["ms_levels_fp16"], mp_table()["ms_levels_self_scaled"]
        fp16 = [c for c in calls_with_method(facts, mp_table()["ms_to_float"])
                if any(_is_fp16(a.value) for a in c.args)]
        fp16 += [c for c in calls_named(facts, mp_names("ms_auto_mixed_precision"))
                 if (c.arg("amp_level", 1) or c.arg("level")) is not None and
                 (c.arg("amp_level", 1) or c.arg("level")).value.literal in levels]
        scaled = any(a.keyword in ("loss_scale_manager", "scale_sense") for c in facts.calls for a in c.args) or \
            calls_named(facts, mp_names("scalers"))
        for call in calls_named(facts, mp_names("ms_model") | mp_names("ms_build_train_network")):
            level = call.arg("amp_level") or call.arg("level")
            text = level.value.literal if level is not None else None
            if text in levels and text not in self_scaled and call.arg("loss_scale_manager") is None:
                ctx.report(self, call.node, f"amp level {text} casts the network to fp16 and adds no loss scale: "
                           "gradients below 6e-8 flush to zero.", fix="loss_scale_manager=DynamicLossScaleManager()")
        if not fp16 or scaled:
            return
        for call in calls_named(facts, mp_names("ms_unscaled_trainers")):
            ctx.report(self, call.node, "the network is cast to fp16 (line "
                       f"{facts.spans[fp16[0].node].line if fp16[0].node < len(facts.spans) else '?'}) and trained "
                       "with TrainOneStepCell, which never scales the loss.",
                       fix="nn.TrainOneStepWithLossScaleCell(net, opt, scale_sense=nn.DynamicLossScaleUpdateCell(...))")


def _npu_file(facts: FileFacts) -> bool:
    return mentions_any(facts, _NPU_PREFIXES)


def runs_on_npu_untranslated(files: list) -> bool:
    """A program (its files) that uses torch_npu and leaves "cuda" device types as they are. transfer_to_npu
    rewrites them (autocast included) and makes torch.cuda.is_available() report NPUs, so whether a
    "cuda" written in code is wrong on NPU depends on the whole program."""
    return not program_loads_transfer_to_npu(files) and any(_npu_file(f) for f in files)


def _cuda_only(mentions: frozenset) -> bool:
    """A condition that tests for CUDA and not for NPU."""
    texts = {m.lower() for m in mentions}
    cuda = any(t == "cuda" or t.startswith("cuda:") or t.endswith("cuda.is_available") for t in texts)
    return cuda and not any("npu" in t for t in texts)


def _autocast_material(facts: FileFacts, call: Call) -> tuple:
    """The `material` premise, disproven where every use of what the autocast region computes is followed
    and none reaches a backward (rules.grad_reach); not stated otherwise."""
    block = with_region(facts, call)
    if block is None:
        return ()
    # A region whose results may reach a gradient (followed over-approximately) leaves the premise unstated.
    reach = region_reach(facts, block)
    if reach.state == UNREACHED:
        return (Premise("material", False, f"the autocast region only evaluates: {reach.evidence}, so it does "
                                           "not change the trained weights"),)
    return ()


class AutocastCudaOnNpu(Rule):
    code = "ACL603"
    name = "autocast-cuda-on-npu"
    category = "mixed-precision"
    severity = "warning"
    summary = "autocast fixed to device_type 'cuda' (or chosen by a CUDA-only test) in a script that runs on NPU"
    doc = RuleDoc(
        what="Reports, in a training program that uses torch_npu and does not import "
        "`torch_npu.contrib.transfer_to_npu`, an autocast whose `device_type` is the literal \"cuda\" "
        "(`torch.autocast('cuda')`, `torch.cuda.amp.autocast()`), or a name assigned from a test that knows only "
        "cuda and cpu (`'cuda' if torch.cuda.is_available() else 'cpu'`). Its `material` premise says whether "
        "what the region computes reaches a backward: a region that only generates validation images or runs "
        "inference after training does not change the trained weights.",
        why="autocast only changes ops of the device type it names. On an NPU host `torch.cuda.is_available()` is "
        "False, so the test picks 'cpu' and the NPU ops run in fp32 while the GPU run used fp16/bf16: a silent "
        "precision (and speed) difference. A literal 'cuda' autocast likewise leaves NPU ops in fp32 unless "
        "`torch_npu.contrib.transfer_to_npu` rewrites it.",
        fix="Name the device the run is on: `torch.autocast(device_type=x.device.type, dtype=...)`, or test "
        "`torch.npu.is_available()` too.",
    )
    invalid = (
        Example.script("""
            import torch
            import torch_npu

            device_type = "cuda" if torch.cuda.is_available() else "cpu"
            model = torch.nn.Linear(8, 8).npu()
            with torch.autocast(device_type=device_type, dtype=torch.bfloat16):  # expect: ACL603
                loss = model(torch.randn(4, 8).npu()).sum()
            loss.backward()
        """, "device type from a CUDA-only test"),
        Example.script("""
            import torch
            import torch_npu


            def step(model, x):
                with torch.cuda.amp.autocast(dtype=torch.bfloat16):  # expect: ACL603
                    return model(x.npu()).sum()


            if __name__ == "__main__":
                step(torch.nn.Linear(8, 8).npu(), torch.randn(4, 8)).backward()
        """, "torch.cuda.amp.autocast on NPU"),
    )
    valid = (
        Example.script("""
            import torch
            import torch_npu

            model = torch.nn.Linear(8, 8).npu()
            x = torch.randn(4, 8).npu()
            with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
                loss = model(x).sum()
            loss.backward()
        """),
        Example.script("""
            import torch
            import torch_npu
            from torch_npu.contrib import transfer_to_npu

            model = torch.nn.Linear(8, 8).cuda()
            with torch.cuda.amp.autocast(dtype=torch.bfloat16):
                loss = model(torch.randn(4, 8).cuda()).sum()
            loss.backward()
        """, "transfer_to_npu maps torch.cuda.amp and 'cuda' device types to NPU"),
        Example.script("""
            import torch
            import torch_npu


            class Rotary(torch.nn.Module):
                def forward(self, x):
                    with torch.autocast("cuda", enabled=False):  # the rotation stays in fp32
                        return x.float() * 2


            model = torch.nn.Sequential(torch.nn.Linear(8, 8), Rotary()).npu()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.randn(4, 8).npu()).sum().backward()
            optimizer.step()
        """, "an autocast that switches mixed precision off keeps the region in fp32 on every device"),
        Example({
            "pretrain.py": """
                import mindspeed.megatron_adaptor  # noqa: F401  (loads transfer_to_npu)
                import torch
                import torch_npu

                from model import forward_step

                if __name__ == "__main__":
                    model = torch.nn.Linear(8, 8).npu()
                    forward_step(model, torch.randn(4, 8).npu()).backward()
            """,
            "model.py": """
                import torch


                def forward_step(model, batch):
                    with torch.autocast("cuda", dtype=torch.bfloat16):
                        return model(batch).sum()
            """,
        }, "MindSpeed's Megatron adaptor loads transfer_to_npu when imported"),
        Example.script("""
            import torch

            model = torch.nn.Linear(8, 8).cuda()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(torch.randn(4, 8).cuda()).sum()
            loss.backward()
        """, "a GPU-only script"),
    )

    def check_program(self, ctx: ProgramContext) -> None:
        files = ctx.program.files
        if not runs_on_npu_untranslated(files):
            return
        for facts in files:
            for call, message, fix in self._findings(facts):
                ctx.report(self, facts, call.node, message, fix=fix, premises=_autocast_material(facts, call))

    @staticmethod
    def _findings(facts: FileFacts):
        for call in _enabled_autocasts(facts):  # `enabled=False` keeps a region in fp32 on every device
            if any(n.startswith("torch.cuda.") for n in call.names):
                yield (call, f"`{call.callee}` only affects CUDA ops; in this NPU program the NPU ops run in fp32.",
                       "torch.autocast(device_type='npu', dtype=...)")
                continue
            arg = call.arg("device_type", 0)
            if arg is None:
                continue
            value = value_of(facts, arg.value, call)
            if value.literal == "cuda" or (isinstance(value.literal, str) and value.literal.startswith("cuda:")):
                yield (call, "autocast device_type='cuda' in an NPU program: NPU ops run in fp32.",
                       "device_type='npu' (or x.device.type)")
            elif _cuda_only(value.mentions):
                yield (call, f"autocast device_type `{arg.value.dotted or 'expression'}` comes from a test that "
                       "knows only cuda/cpu: on an NPU host it is 'cpu' and NPU ops run in fp32.",
                       "test torch.npu.is_available() as well, or use x.device.type")


class ScalerOnlyOnCuda(Rule):
    code = "ACL604"
    name = "loss-scaler-only-on-cuda"
    category = "mixed-precision"
    severity = "warning"
    summary = "A GradScaler created (or enabled) only when the device is CUDA"
    doc = RuleDoc(
        what="Reports a `GradScaler` constructed under a test that only recognises CUDA (`if device.type == "
        "'cuda'`, `... if torch.cuda.is_available() else None`, `enabled=device == 'cuda'`) in a file that uses "
        "torch_npu.",
        why="On the NPU the test is false, so the run trains fp16 with no loss scale (gradients below 6e-8 flush "
        "to zero, no overflow skipping) while the GPU run scaled from 65536 down: the curves part within the first "
        "hundred steps.",
        fix="Create the scaler for NPU too: `torch.amp.GradScaler(device.type, enabled=use_fp16)`.",
    )
    invalid = (
        Example.script("""
            import torch
            import torch_npu


            def make_scaler(device):
                if device.type == "cuda":
                    return torch.cuda.amp.GradScaler()  # expect: ACL604
                return None


            scaler = torch.amp.GradScaler(enabled=torch.cuda.is_available())  # expect: ACL604
        """),
    )
    valid = (
        Example.script("""
            import torch
            import torch_npu


            def make_scaler(device, fp16):
                return torch.amp.GradScaler(device.type, enabled=fp16)


            def other(device):
                if device.type in ("cuda", "npu"):
                    return torch.amp.GradScaler(device.type)
        """),
    )

    def check_file(self, ctx: FileContext) -> None:
        facts = ctx.facts
        if not _npu_file(facts):
            return
        for call in calls_named(facts, mp_names("scalers")):
            if not call.names & mp_names("torch_grad_scalers"):
                continue
            enabled = call.arg("enabled", 5)
            gated = call.guard is not None and not call.guard.negated and _cuda_only(call.guard.mentions)
            if enabled is not None and _cuda_only(value_of(facts, enabled.value, call).mentions |
                                                  ({enabled.value.base} if enabled.value.base else set())):
                gated = True
            if gated:
                ctx.report(self, call.node, "the GradScaler exists only when the device is CUDA: the NPU run "
                           "trains fp16 without loss scaling.", fix="torch.amp.GradScaler(device.type, enabled=fp16)")


RULES = [Fp16WithoutLossScaling(), MindSporeFp16WithoutLossScale(), AutocastCudaOnNpu(), ScalerOnlyOnCuda()]
