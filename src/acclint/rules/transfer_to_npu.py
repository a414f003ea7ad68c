"""Category `mixed-precision`: what `torch_npu.contrib.transfer_to_npu` silently changes
(docs/knowledge/numerics-modes.md#transfer_to_npu): torch.cuda.DoubleTensor becomes the NPU's FloatTensor ("the double
type is not supported now"), and torch.jit.script / script_method become no-ops."""

from __future__ import annotations

from typing import ClassVar, Iterator

from acclint.linter.context import ProgramContext
from acclint.linter.facts import FileFacts
from acclint.linter.frameworks import loads_transfer_to_npu
from acclint.linter.rulebase import Example, RuleDoc
from acclint.rules.base import ExplicitRule, ProgramRule, Written
from acclint.rules.program_facts import ProgramFacts

_DOUBLE = frozenset({"torch.cuda.DoubleTensor"})
_JIT = frozenset({"torch.jit.script", "torch.jit.script_method"})




class _ShimRule(ExplicitRule, ProgramRule):
    """Reports, in every file of a program that imports the shim anywhere, what the shim rewrites; and,
    in any scanned file that imports the shim itself, its own uses (also when no program is found)."""

    frameworks: ClassVar[tuple] = ("torch_npu",)

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        files = ctx.program.files
        shim = next((f for f in files if loads_transfer_to_npu(f)), None)
        if shim is None:
            return
        for file in files:
            for node, message in self.uses(file):
                ctx.report(self, file, node, f"{message} (transfer_to_npu is imported in {shim.path})",
                           fix=self.fix_text)

    fix_text: ClassVar[str] = ""

    def written(self, facts: FileFacts) -> Iterator[Written]:
        if loads_transfer_to_npu(facts):
            for node, message in self.uses(facts):
                yield Written(node, f"{message} (transfer_to_npu is imported in this file)", self.fix_text)

    def uses(self, file: FileFacts) -> Iterator[tuple]:
        raise NotImplementedError


class TransferToNpuDoubleTensor(_ShimRule):
    code = "ACL611"
    name = "transfer-to-npu-double-tensor"
    category = "mixed-precision"
    severity = "warning"
    summary = "torch.cuda.DoubleTensor in a program that imports transfer_to_npu (the shim makes it float32)"
    fix_text = "use torch.float64 tensors on the CPU for what must stay double, or accept float32 on both sides"
    doc = RuleDoc(
        what="Reports `torch.cuda.DoubleTensor(...)` and `.type(torch.cuda.DoubleTensor)` in any file of a program "
        "that imports `torch_npu.contrib.transfer_to_npu` (often in the entry script, while the float64 code "
        "sits in a module it imports).",
        why="The shim assigns `torch.cuda.DoubleTensor = torch.npu.FloatTensor` (torch_npu "
        "contrib/transfer_to_npu.py: 'the double type is not supported now'). What the GPU run keeps in float64 "
        "(52-bit mantissa, ~16 decimal digits) is float32 on the NPU (23-bit mantissa, ~7 digits), silently: "
        "accumulators, statistics and loss sums written to be exact in double drift by ~1e-7 relative per "
        "operation instead of ~1e-16.",
        fix="Keep what must be double on the CPU (`torch.zeros(n, dtype=torch.float64)` without `.cuda()`), or "
        "make both sides use float32 so the comparison is like for like.",
        references=("https://gitee.com/ascend/pytorch/blob/master/torch_npu/contrib/transfer_to_npu.py",),
    )
    invalid = (
        Example({
            "train.py": """
                import torch
                import torch_npu
                from torch_npu.contrib import transfer_to_npu

                from metrics import RunningMean

                if __name__ == "__main__":
                    meter = RunningMean()
                    loss = torch.nn.Linear(4, 1).cuda()(torch.ones(4).cuda()).sum()
                    loss.backward()
                    meter.update(loss)
            """,
            "metrics.py": """
                import torch


                class RunningMean:
                    def __init__(self):
                        self.total = torch.cuda.DoubleTensor([0.0])  # expect: ACL611

                    def update(self, value):
                        self.total += value.detach().type(torch.cuda.DoubleTensor)  # expect: ACL611
            """,
        }, "the entry script imports the shim, a module it imports uses float64"),
    )
    valid = (
        Example.script("""
            import torch
            import torch_npu
            from torch_npu.contrib import transfer_to_npu

            total = torch.zeros(1, dtype=torch.float64)  # a CPU double: the shim leaves it alone


            def step(model, batch):
                loss = model(batch.cuda()).sum()
                loss.backward()
                total.add_(loss.detach().cpu().double())
        """, "float64 kept on the CPU"),
        Example.script("""
            import torch

            if __name__ == "__main__":
                total = torch.cuda.DoubleTensor([0.0])
                loss = torch.nn.Linear(4, 1).cuda()(torch.ones(4).cuda()).sum()
                loss.backward()
        """, "no transfer_to_npu: DoubleTensor stays float64"),
    )

    def uses(self, file: FileFacts) -> Iterator[tuple]:
        for call in file.calls:
            if call.names & _DOUBLE:
                yield call.node, "`torch.cuda.DoubleTensor` is float32 under transfer_to_npu (it becomes torch.npu.FloatTensor)"
            elif call.method == "type" and any(a.value.names & _DOUBLE or a.value.literal == "torch.cuda.DoubleTensor"
                                               for a in call.args):
                yield call.node, "`.type(torch.cuda.DoubleTensor)` casts to float32 under transfer_to_npu"


class TransferToNpuJitScript(_ShimRule):
    code = "ACL612"
    name = "transfer-to-npu-jit-script"
    category = "mixed-precision"
    severity = "info"
    summary = "torch.jit.script in a program that imports transfer_to_npu (the shim turns it into a no-op)"
    fix_text = "compare eager code on both sides (disable scripting on the GPU side too), or drop the shim"
    doc = RuleDoc(
        what="Reports `torch.jit.script` / `torch.jit.script_method` (called or as a decorator) in any file of a "
        "program that imports `torch_npu.contrib.transfer_to_npu`.",
        why="The shim replaces both with functions that return their argument unchanged and emit a RuntimeWarning "
        "(torch_npu contrib/transfer_to_npu.py). The GPU run executes the TorchScript graph (fused elementwise "
        "kernels, its own op order), the NPU run the eager Python: the same model computes through different "
        "kernels, and fused fp32 chains round differently (one rounding per fused kernel against one per op).",
        fix="Run eager code on the GPU side as well while aligning accuracy (`PYTORCH_JIT=0`), or script nothing.",
        references=("https://gitee.com/ascend/pytorch/blob/master/torch_npu/contrib/transfer_to_npu.py",),
    )
    invalid = (
        Example.script("""
            import torch
            import torch_npu
            from torch_npu.contrib import transfer_to_npu


            @torch.jit.script
            def bias_gelu(bias, y):  # expect: ACL612
                x = bias + y
                return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


            if __name__ == "__main__":
                model = torch.jit.script(torch.nn.Linear(4, 4)).cuda()  # expect: ACL612
                model(bias_gelu(torch.ones(4).cuda(), torch.ones(4).cuda())).sum().backward()
        """),
    )
    valid = (
        Example.script("""
            import torch
            import torch_npu


            @torch.jit.script
            def bias_gelu(bias, y):
                return bias + y


            if __name__ == "__main__":
                model = torch.nn.Linear(4, 4).npu()
                model(bias_gelu(torch.ones(4).npu(), torch.ones(4).npu())).sum().backward()
        """, "no transfer_to_npu: scripting runs"),
    )

    def uses(self, file: FileFacts) -> Iterator[tuple]:
        message = "`{}` is a no-op under transfer_to_npu: the NPU runs eager code where the GPU runs TorchScript"
        for function in file.functions.values():
            for decorator in function.decorators:
                if decorator.names & _JIT:
                    yield function.node, message.format(f"@{decorator.dotted}")
        for call in file.calls:
            if call.names & _JIT:
                yield call.node, message.format(call.callee)


RULES = [TransferToNpuDoubleTensor(), TransferToNpuJitScript()]
