"""Category `mixed-precision`: the switches that let float32 matmuls and convolutions compute in a narrower
format, CUDA's TF32 (10 mantissa bits) and the NPU's HF32 (11), against float32's 23. Each side has its own
switches with their own defaults, and neither side's switch acts on the other (docs/knowledge/numerics-modes.md),
so a switch written on one side leaves the other computing at another precision. Found wherever the switch is
written: in a file that uses torch_npu, or in any module a training program runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

from acclint.findings import Premise
from acclint.linter.context import FileContext, ProgramContext
from acclint.linter.facts import FileFacts
from acclint.linter.frameworks import program_loads_transfer_to_npu
from acclint.linter.rulebase import Example, Rule, RuleDoc
from acclint.rules.base import ProgramRule, report_written
from acclint.rules.flow import calls_named, mentions_any
from acclint.rules.mixed_precision import mp_table
from acclint.rules.program_facts import ProgramFacts

_NPU_PREFIXES = ("torch_npu", "torch.npu", "mindspeed")
_LABELS = {"float32": "float32", "tf32": "TF32", "hf32": "HF32", "bfloat16": "bfloat16", "float16": "float16"}
_MATMUL = "torch.backends.cuda.matmul.allow_tf32"
_PRECISION_SETTER = frozenset({"torch.set_float32_matmul_precision"})


def fmt(name: str) -> str:
    """`TF32 (10 mantissa bits)`."""
    return f"{_LABELS[name]} ({mp_table()['mantissa_bits'][name]} mantissa bits)"


def _where(facts: FileFacts, node: int) -> str:
    return f"{facts.path}:{facts.spans[node].line}"


@dataclass(frozen=True)
class CudaSwitch:
    """A CUDA float32-precision switch written with a literal: which ops, the format CUDA computes them in."""

    node: int
    written: str  # as written, for messages: "torch.backends.cudnn.allow_tf32 = False"
    switch: str  # the tf32 table's key for the ops it governs
    gpu_format: str

    @property
    def npu(self) -> str:
        return mp_table()["tf32"][self.switch]["npu"]

    @property
    def npu_format(self) -> str:
        """What the NPU computes these ops in at torch_npu's default."""
        return "hf32" if mp_table()["tf32"][self.switch]["npu_default"] else "float32"

    @property
    def ops(self) -> str:
        return mp_table()["tf32"][self.switch]["ops"]


def cuda_switches(facts: FileFacts) -> Iterator[CudaSwitch]:
    """The CUDA TF32 switches of one file written with a literal, in source order."""
    table = mp_table()
    for assignment in facts.assignments:
        for name in sorted(assignment.names & table["tf32"].keys()):
            literal = assignment.value.literal
            if isinstance(literal, bool):
                yield CudaSwitch(assignment.node, f"{name} = {literal}", name, "tf32" if literal else "float32")
    for call in calls_named(facts, _PRECISION_SETTER):
        arg = call.arg("precision", 0)
        literal = arg.value.literal if arg is not None else None
        if literal in table["matmul_precision"]:
            yield CudaSwitch(call.node, f"torch.set_float32_matmul_precision({literal!r})", _MATMUL,
                             table["matmul_precision"][literal])


def hf32_switches(facts: FileFacts) -> Iterator[tuple]:
    """(node, the hf32 table's key, the literal written) for each NPU HF32 switch the file writes."""
    for key, entry in mp_table()["hf32"].items():
        names = frozenset(entry["names"])
        for assignment in facts.assignments:
            if assignment.names & names and isinstance(assignment.value.literal, bool):
                yield assignment.node, key, assignment.value.literal


def _npu_written(files) -> frozenset:
    """The NPU HF32 switches (the tf32 table's `npu` names) the files set, whatever to."""
    return frozenset(key for facts in files for _, key, _ in hf32_switches(facts))


def _npu_file(facts: FileFacts) -> bool:
    return mentions_any(facts, _NPU_PREFIXES)


def _runs_on_npu(files) -> bool:
    return any(_npu_file(f) for f in files) or program_loads_transfer_to_npu(files)


def _uneven(files) -> Iterator[tuple]:
    """(file, switch) for each CUDA switch whose ops one side computes in float32 and the other in a narrower
    format (TF32 against HF32, 10 against 11 bits, is the same intent), the NPU's own switch unset."""
    written = _npu_written(files)
    for facts in files:
        for switch in cuda_switches(facts):
            if (switch.gpu_format == "float32") != (switch.npu_format == "float32") and switch.npu not in written:
                yield facts, switch


class Tf32FlagOnNpu(Rule):
    code = "ACL605"
    name = "tf32-flag-without-hf32"
    category = "mixed-precision"
    severity = "warning"
    tensor_framework = "torch"
    summary = "A CUDA TF32 switch with the NPU's HF32 switch left at a default that computes otherwise"
    doc = RuleDoc(
        what="Reports `torch.backends.cuda.matmul.allow_tf32 = True`, `torch.set_float32_matmul_precision('high'|"
        "'medium')` and `torch.backends.cudnn.allow_tf32 = False` when the matching NPU switch "
        "(`torch.npu.matmul.allow_hf32`, `torch.npu.conv.allow_hf32`) is not set: in a file that uses torch_npu, "
        "and in any module a training program that runs on NPU (torch_npu, MindSpeed or transfer_to_npu anywhere "
        "in it) imports. In a GPU program that never touches the NPU the same switch is reported as info: it is "
        "the GPU reference, and the NPU side at its defaults computes otherwise.",
        why="The CUDA switches do nothing on NPU (transfer_to_npu does not map them), and the defaults differ: NPU "
        "matmul HF32 is **off** (float32, 23 mantissa bits) and conv HF32 is **on** (HF32, 11 bits). So a GPU run "
        "with TF32 matmuls (10 bits) compares against float32 NPU matmuls, and a GPU run that turned cuDNN TF32 "
        "off (float32 convolutions, 23 bits) against HF32 NPU convolutions (11 bits): the inputs of every such op "
        "differ from their third significant digit on (2**-11 against 2**-23 relative rounding).",
        fix="Set the NPU switch with the same intent beside it: `torch.npu.matmul.allow_hf32 = True` for TF32 "
        "matmuls, `torch.npu.conv.allow_hf32 = False` for float32 convolutions.",
        references=("docs/knowledge/numerics-modes.md#tf32-and-hf32",),
    )
    invalid = (
        Example.script("""
            import torch
            import torch_npu

            torch.backends.cuda.matmul.allow_tf32 = True  # expect: ACL605
            torch.backends.cudnn.allow_tf32 = False  # expect: ACL605
            torch.set_float32_matmul_precision("high")  # expect: ACL605
        """, "switches written in a file that uses torch_npu"),
        Example({
            "train.py": """
                import torch
                import torch_npu

                from setup_numerics import configure

                if __name__ == "__main__":
                    configure()
                    model = torch.nn.Linear(8, 8).npu()
                    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                    loss = model(torch.randn(4, 8).npu()).pow(2).mean()
                    loss.backward()
                    optimizer.step()
            """,
            "setup_numerics.py": """
                import torch


                def configure():
                    torch.backends.cudnn.deterministic = True
                    torch.backends.cudnn.allow_tf32 = False  # expect: ACL605
            """,
        }, "a helper module the NPU training program imports, which never imports torch_npu itself"),
    )
    valid = (
        Example.script("""
            import torch
            import torch_npu

            torch.backends.cuda.matmul.allow_tf32 = True
            torch.npu.matmul.allow_hf32 = True
            torch.backends.cudnn.allow_tf32 = False
            torch.npu.conv.allow_hf32 = False
        """, "both sides set with the same intent"),
        Example({
            "train.py": """
                import torch
                import torch_npu

                from setup_numerics import configure

                if __name__ == "__main__":
                    configure()
                    torch.npu.conv.allow_hf32 = False
                    model = torch.nn.Linear(8, 8).npu()
                    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                    model(torch.randn(4, 8).npu()).sum().backward()
                    optimizer.step()
            """,
            "setup_numerics.py": """
                import torch


                def configure():
                    torch.backends.cudnn.allow_tf32 = False
            """,
        }, "the NPU switch set in another module of the same program"),
        Example.script("""
            import torch
            import torch_npu

            torch.backends.cudnn.allow_tf32 = True
            torch.set_float32_matmul_precision("highest")
        """, "the switches at values both sides compute alike (TF32/HF32 convolutions, float32 matmuls)"),
    )

    def check_file(self, ctx: FileContext) -> None:
        if _npu_file(ctx.facts):
            for facts, switch in _uneven([ctx.facts]):
                report_written(ctx, self, switch.node, _npu_message(switch), fix=f"{switch.npu} = "
                               f"{switch.gpu_format != 'float32'}")

    def check_program(self, ctx: ProgramContext) -> None:
        files = ctx.program.files
        on_npu = _runs_on_npu(files)
        for facts, switch in _uneven(files):
            message = _npu_message(switch) if on_npu else _gpu_message(switch)
            ctx.report(self, facts, switch.node, message, fix=f"{switch.npu} = {switch.gpu_format != 'float32'}",
                       severity=None if on_npu else "info",
                       premises=(Premise("value", True, f"`{switch.written}` at {_where(facts, switch.node)}, and "
                                         f"no `{switch.npu}` in the program"),))


def _npu_message(switch: CudaSwitch) -> str:
    return (f"`{switch.written}` does nothing on NPU: CUDA computes {switch.ops} in {fmt(switch.gpu_format)}, the NPU "
            f"in {fmt(switch.npu_format)} with `{switch.npu}` at its default. The two sides compute these ops at "
            "different precision.")


def _gpu_message(switch: CudaSwitch) -> str:
    return (f"`{switch.written}`: this GPU program computes {switch.ops} in {fmt(switch.gpu_format)}; an NPU run at "
            f"torch_npu's defaults (`{switch.npu}`) computes them in {fmt(switch.npu_format)}. Set the NPU switch "
            "to match in the NPU port.")


class NpuHf32AgainstFp32(ProgramRule):
    code = "ACL616"
    name = "npu-hf32-against-fp32"
    category = "mixed-precision"
    severity = "warning"
    # Stable by declaration: a setting the code writes explicitly, right wherever its premises are proven;
    # the tuning corpus holds no proven finding of it to measure (benchmarks/precision/).
    maturity = "stable"
    tensor_framework = "torch"
    summary = "The NPU's HF32 switched on for ops the GPU side computes in full float32"
    doc = RuleDoc(
        what="Reports `torch.npu.matmul.allow_hf32 = True` (also under `torch_npu.npu`) in a training program that "
        "leaves CUDA matmuls in float32: no `torch.backends.cuda.matmul.allow_tf32 = True` and no "
        "`set_float32_matmul_precision('high'|'medium')` (PyTorch's default since 1.12 is float32); and "
        "`torch.npu.conv.allow_hf32 = True` (or `torch.npu.aclnn.allow_hf32`) in a program that switches cuDNN "
        "TF32 off (`torch.backends.cudnn.allow_tf32 = False`). HF32 convolutions against cuDNN's default TF32 "
        "ones (11 against 10 mantissa bits) are the same intent and are left alone.",
        why="HF32 keeps float32's range with 11 mantissa bits; float32 has 23. With matmul HF32 on, every float32 "
        "matmul on the NPU rounds its inputs to a relative step of 2**-11 ≈ 4.9e-4, where the GPU's float32 "
        "rounds to 2**-23 ≈ 1.2e-7: the two sides' activations differ from the third or fourth significant "
        "digit, and the losses drift apart over steps. torch_npu leaves matmul HF32 off by default; switching it "
        "on is a speed choice that a parity run against a float32 GPU run must undo.",
        fix="For a parity run, `torch.npu.matmul.allow_hf32 = False` (and `torch.npu.conv.allow_hf32 = False` when "
        "the GPU side turned cuDNN TF32 off); or switch TF32 on on the GPU side for a like-for-like comparison.",
        references=("docs/knowledge/numerics-modes.md#tf32-and-hf32",
                    "CANN ATC --allow_hf32: HF32 has float32's range and an 11-bit mantissa, close to FP16's 10 "
                    "(hiascend.com, atlasatcparam_16_0077)"),
    )
    invalid = (
        Example.script("""
            import torch
            import torch_npu

            torch.npu.matmul.allow_hf32 = True  # expect: ACL616

            if __name__ == "__main__":
                model = torch.nn.Linear(8, 8).npu()
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                loss = model(torch.randn(4, 8).npu()).pow(2).mean()
                loss.backward()
                optimizer.step()
        """, "matmul HF32 on, against PyTorch's float32 matmuls"),
        Example.script("""
            import torch
            import torch_npu

            if __name__ == "__main__":
                torch.backends.cudnn.allow_tf32 = False
                torch.npu.conv.allow_hf32 = True  # expect: ACL616
                model = torch.nn.Conv2d(3, 8, 3).npu()
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.randn(2, 3, 8, 8).npu()).mean().backward()
                optimizer.step()
        """, "cuDNN pinned to float32, the NPU's convolutions kept in HF32"),
    )
    valid = (
        Example.script("""
            import torch
            import torch_npu

            torch.backends.cuda.matmul.allow_tf32 = True
            torch.npu.matmul.allow_hf32 = True

            if __name__ == "__main__":
                model = torch.nn.Linear(8, 8).npu()
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.randn(4, 8).npu()).sum().backward()
                optimizer.step()
        """, "TF32 on one side, HF32 on the other: the same intent"),
        Example.script("""
            import torch
            import torch_npu

            torch.npu.matmul.allow_hf32 = False
            torch.npu.conv.allow_hf32 = True

            if __name__ == "__main__":
                model = torch.nn.Conv2d(3, 8, 3).npu()
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.randn(2, 3, 8, 8).npu()).mean().backward()
                optimizer.step()
        """, "matmul HF32 off; conv HF32 against cuDNN's default TF32"),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        files = ctx.program.files
        gpu = _gpu_formats(files)
        for file in files:
            for node, key, literal in hf32_switches(file):
                gpu_switch = mp_table()["hf32"][key]["gpu"]
                gpu_format, evidence = gpu.get(gpu_switch) or _gpu_default(gpu_switch)
                if literal is not True or gpu_format != "float32":
                    continue
                ops = mp_table()["tf32"][gpu_switch]["ops"]
                message = (f"`{key} = True` computes the NPU's {ops} in {fmt('hf32')} where the GPU side computes "
                           f"them in {fmt('float32')} ({evidence}): inputs rounded to 2**-11 against 2**-23, the two "
                           "sides' activations differ from the third significant digit.")
                ctx.report(self, file, node, message, fix=f"{key} = False for a parity run",
                           premises=(Premise("value", True, f"`{key} = True` at {_where(file, node)}; the GPU side: "
                                             f"{evidence}"),))


def _gpu_formats(files) -> dict:
    """tf32 table key -> (format CUDA computes those ops in, where the program says so), from its last write."""
    found: dict = {}
    for facts in files:
        for switch in cuda_switches(facts):
            found[switch.switch] = (switch.gpu_format, f"`{switch.written}` at {_where(facts, switch.node)}")
    return found


def _gpu_default(switch: str) -> tuple:
    entry = mp_table()["tf32"][switch]
    name = "tf32" if entry["gpu_default"] else "float32"
    return name, (f"the program writes no CUDA switch for {entry['ops']}, and `{switch}` defaults to "
                  f"{entry['gpu_default']}")


RULES = [Tf32FlagOnNpu(), NpuHf32AgainstFp32()]
