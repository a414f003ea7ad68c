"""Category `determinism`: ops that raise under `torch.use_deterministic_algorithms(True)` on CUDA
(docs/knowledge/determinism.md#deterministic-ops). Which ops raise, per torch release, comes from the generated
table knowledge/deterministic_ops.toml; how code reaches them, argument by argument, from
knowledge/deterministic_calls.toml."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from acclint.knowledge import table
from acclint.linter.context import ProgramContext
from acclint.linter.facts import Call, FileFacts
from acclint.linter.rulebase import Example, RuleDoc
from acclint.rules.base import ProgramRule
from acclint.rules.memo import per_flow
from acclint.rules.program_facts import ProgramFacts


@dataclass(frozen=True)
class OpUse:
    file: FileFacts
    call: Call
    op: str  # the docstring's name of the op
    fix: str
    raises: bool  # takes a path that raises under the mode (else only nondeterministic)

    def where(self) -> str:
        return f"{self.file.path}:{self.file.spans[self.call.node].line}"


@lru_cache(maxsize=1)
def _index() -> tuple:
    """(qualified name -> [(key, form)], method name -> [key]) over the raising entries."""
    by_name: dict = {}
    by_method: dict = {}
    for key, entry in table("deterministic_calls")["raising"].items():
        for form in ("classes", "functions"):
            for name in entry.get(form, ()):
                by_name.setdefault(name, []).append((key, form[:-2] if form == "classes" else "function"))
        for method in entry.get("methods", ()):
            by_method.setdefault(method, []).append(key)
    return by_name, by_method


# How many of the newest recorded releases count: about two years of torch, the span a GPU
# baseline and the torch_npu releases of a migration are pinned within.
RECENT_RELEASES = 4


def newest_release() -> str:
    return table("deterministic_ops")["releases_recorded"][-1]


def recent_releases() -> list:
    return table("deterministic_ops")["releases_recorded"][-RECENT_RELEASES:]


def _expand(spec: str, recorded: list) -> list:
    """The recorded releases a range ("2.1-2.13") or a single release covers."""
    first, _, last = spec.partition("-")
    if first not in recorded or (last or first) not in recorded:
        return []
    return recorded[recorded.index(first):recorded.index(last or first) + 1]


def op_rows(op: str) -> list:
    return table("deterministic_ops")["ops"].get(op, {}).get("raises", [])


@lru_cache(maxsize=None)
def _raises_now(op: str) -> bool:
    """Raises in one of the recent releases (an op fixed in the newest still stops a baseline pinned
    one release back)."""
    recorded = table("deterministic_ops")["releases_recorded"]
    recent = set(recent_releases())
    return any(recent.intersection(_expand(r, recorded)) for row in op_rows(op) for r in row["releases"])


def _takes_raising_path(call: Call, entry: dict, form: str) -> bool:
    arg_spec = entry.get("arg")
    if arg_spec is not None:
        arg = call.arg(arg_spec["keyword"], arg_spec.get(f"{form}_position"))
        if arg_spec.get("present"):
            return arg is not None and arg.value.literal is not None
        if arg is None:
            value = arg_spec.get("default")
        elif arg.value.is_literal:
            value = arg.value.literal
        else:
            value = arg.value.dotted  # a dtype such as torch.float32; other expressions stay unknown
        if value is None or value not in arg_spec.get("raises_when", ()):
            return False
    size = entry.get("size_one_is_mean")
    if size is not None:
        arg = call.arg(size["keyword"], size.get(f"{form}_position"))
        if arg is None or not arg.value.is_literal:
            return False  # size unknown: it may be 1, which is computed as a mean
        if arg.value.literal in (1, (1, 1), [1, 1]):
            return False
    return True


def raising_use(file: FileFacts, call: Call) -> Optional[OpUse]:
    """The op a call reaches that raises under deterministic mode in a recent recorded release."""
    by_name, by_method = _index()
    raising = table("deterministic_calls")["raising"]
    candidates = [(key, form) for name in call.names for key, form in by_name.get(name, ())]
    if not call.names and "." in call.callee:  # a method on a value: `x.histc(...)`
        candidates += [(key, "method") for key in by_method.get(call.method, ())]
    for key, form in candidates:
        entry = raising[key]
        op = entry.get("op", key)
        if _raises_now(op) and _takes_raising_path(call, entry, form):
            return OpUse(file, call, op, entry["fix"], True)
    return None


def reached_calls(ctx: ProgramContext) -> list:
    """(file, call) for the calls a program runs: its flow, and the methods (forward) of the classes
    whose constructors it runs."""
    return per_flow(ctx, "reached-calls", _reached_calls)


def _reached_calls(ctx: ProgramContext) -> list:
    program = ctx.program
    seen = set()
    out = []
    for step in program.calls():
        seen.add(id(step.fact))
        out.append((step.file, step.fact))
    for file in program.files:
        owners = {qualname.rsplit(".", 1)[0] for path, qualname in program.reached_functions
                  if path == file.abspath and qualname.endswith(".__init__")}
        if not owners:
            continue
        for call in file.calls:
            function = file.functions.get(call.scope)
            if function is not None and function.owner in owners and id(call) not in seen:
                seen.add(id(call))
                out.append((file, call))
    return out


def raising_uses(ctx: ProgramContext) -> list:
    return per_flow(ctx, "raising-op-uses", lambda c: [use for file, call in reached_calls(c)
                                                           if (use := raising_use(file, call)) is not None])


def nondeterministic_uses(ctx: ProgramContext, facts: ProgramFacts) -> list:
    """Ops the program reaches whose results differ between runs while the mode is off: the raising
    ones, the CUDA ones the mode makes deterministic and, on the NPU, torch_npu's documented list.
    They follow from the flow alone (its devices are in `facts.uses`), so every run shares them."""
    return per_flow(ctx, "nondeterministic-uses", lambda c: _nondeterministic_uses(c, facts))


def _nondeterministic_uses(ctx: ProgramContext, facts: ProgramFacts) -> list:
    calls = table("deterministic_calls")
    groups = [calls["cuda_made_deterministic"]] if "cuda" in facts.uses else []
    if "npu" in facts.uses:
        groups.append(calls["npu"])
    found = [f"{use.op} ({use.where()})" for use in raising_uses(ctx)] if "cuda" in facts.uses else []
    for file, call in reached_calls(ctx):
        for group in groups:
            names = set(group.get("functions", ())) | set(group.get("classes", ()))
            method = not call.names and "." in call.callee and call.method in group.get("methods", ())
            hit = sorted(call.names & names)
            if hit or method:
                label = f"{hit[0] if hit else call.method} ({file.path}:{file.spans[call.node].line})"
                if label not in found:
                    found.append(label)
                break
    return found


class DeterministicOpRaises(ProgramRule):
    code = "ACL210"
    name = "deterministic-op-raises"
    category = "determinism"
    severity = "warning"
    summary = "an op that raises RuntimeError on CUDA once torch.use_deterministic_algorithms(True) is on"
    frameworks = ("torch",)
    tensor_framework = "torch"
    doc = RuleDoc(
        what="In a CUDA training program that calls `torch.use_deterministic_algorithms(True)` without "
        "`warn_only=True`, reports each use of an op that has no deterministic CUDA kernel: module classes "
        "constructed in the model code the program reaches, functional calls and tensor methods. The list comes "
        "from the docstring of `torch.use_deterministic_algorithms` per torch release "
        "(knowledge/deterministic_ops.toml, regenerated by tools/gen_deterministic_ops.py from each release's "
        "wheel: 2.0 to 2.15 are recorded) and is argument-aware: `interpolate`/`Upsample` only for linear, bilinear, bicubic and "
        "trilinear modes; `AdaptiveAvgPool2d` not for output size 1 (ATen computes it as a mean); "
        "`EmbeddingBag` only for mode='max'; `scatter_reduce` only for reduce='prod'; `bincount` only with "
        "weights; `median` only with `dim` (indices output); `F.pad(mode='reflect')` and "
        "`Conv2d(padding_mode='reflect')` as reflection padding. `NLLLoss`/`cross_entropy` are not reported: only "
        "the 2-D `nll_loss2d` kernel (spatial targets) raises, and the source does not show the target's shape. "
        "`cumsum` is reported only with an explicit floating `dtype=` (it raises up to 2.13). An op is reported "
        "when it raises in one of the four newest recorded releases; ops that raised only before (MaxPool3d, "
        "ReplicationPad*, kthvalue in 2.0) are in the table but not reported. The message lists the releases.",
        why="The checklist asks both runs to turn deterministic algorithms on. Then the first step that reaches, "
        "say, the backward of a bilinear `interpolate` or of `AdaptiveAvgPool2d((7, 7))` on CUDA raises "
        "RuntimeError (`upsample_bilinear2d_backward_out_cuda does not have a deterministic implementation`). The "
        "GPU baseline stops at step 0, and users turn determinism off again, so the GPU-vs-NPU comparison loses "
        "its run-to-run reproducibility: atomicAdd-based kernels add in a different order each run, and each "
        "reordered fp32 addition can differ by one rounding (2**-24, about 6e-8 relative), which compounds over "
        "thousands of steps.",
        fix="Use the deterministic replacement the message names (AvgPool2d with a computed kernel, "
        "`mode=\"nearest\"`, replicate padding, ...), or call `torch.use_deterministic_algorithms(True, "
        "warn_only=True)` on both sides and record the op as a known source of difference.",
        references=("https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html",),
    )
    invalid = (
        Example.script("""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class Head(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.pool = nn.AdaptiveAvgPool2d((7, 7))  # expect: ACL210
                    self.gap = nn.AdaptiveAvgPool2d(1)
                    self.fc = nn.Linear(49, 10)

                def forward(self, x):
                    x = F.interpolate(x, scale_factor=2, mode="bilinear")  # expect: ACL210
                    x = F.interpolate(x, scale_factor=0.5)
                    return self.fc(self.pool(x).flatten(1))


            if __name__ == "__main__":
                torch.use_deterministic_algorithms(True)
                model = Head().cuda()
                loss = model(torch.randn(2, 1, 14, 14, device="cuda")).sum()
                loss.backward()
        """, "a model whose forward the program reaches"),
        Example.script("""
            import torch


            def train(model, batches):
                bag = torch.nn.EmbeddingBag(1000, 64, mode="max")  # expect: ACL210
                for ids, offsets in batches:
                    counts = torch.bincount(ids, weights=offsets.float())  # expect: ACL210
                    loss = model(bag(ids.cuda(), offsets.cuda())).sum()
                    loss.backward()


            if __name__ == "__main__":
                torch.use_deterministic_algorithms(True)
                train(torch.nn.Linear(64, 1).cuda(), [])
        """, "argument-aware: EmbeddingBag max mode, bincount with weights"),
    )
    valid = (
        Example.script("""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class Head(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.gap = nn.AdaptiveAvgPool2d(1)
                    self.fc = nn.Linear(64, 10)

                def forward(self, x):
                    x = F.interpolate(x, scale_factor=2, mode="nearest")
                    return self.fc(self.gap(x).flatten(1))


            if __name__ == "__main__":
                torch.use_deterministic_algorithms(True)
                model = Head().cuda()
                loss = F.cross_entropy(model(torch.randn(2, 64, 7, 7, device="cuda")), torch.tensor([1, 2]).cuda())
                loss.backward()
        """, "output size 1 is a mean, nearest mode, 1-D cross_entropy"),
        Example.script("""
            import torch
            import torch.nn as nn


            if __name__ == "__main__":
                torch.use_deterministic_algorithms(True, warn_only=True)
                model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.AdaptiveAvgPool2d((7, 7))).cuda()
                model(torch.randn(1, 3, 16, 16, device="cuda")).sum().backward()
        """, "warn_only=True: the op is a recorded, known difference"),
        Example.script("""
            import torch
            import torch.nn as nn


            if __name__ == "__main__":
                torch.manual_seed(0)
                model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.AdaptiveAvgPool2d((7, 7))).cuda()
                model(torch.randn(1, 3, 16, 16, device="cuda")).sum().backward()
        """, "deterministic mode off (ACL201 names the op instead)"),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        source = facts.effects.get("deterministic-algorithms")
        if source is None or source.step is None or "cuda" not in facts.uses:
            return
        setting = source.step.fact
        warn_only = setting.arg("warn_only") if isinstance(setting, Call) else None
        if warn_only is not None and warn_only.value.literal is not False:
            return  # warn_only=True, or a value acclint cannot read
        where = f"{source.step.file.path}:{source.step.file.spans[setting.node].line}"
        for use in raising_uses(ctx):
            self._report(ctx, use, where)

    def _report(self, ctx: ProgramContext, use: OpUse, where: str) -> None:
        rows = op_rows(use.op)
        phase = "in backward" if any("differentiate" in row["when"] for row in rows) else "in forward"
        releases = ", ".join(sorted({r for row in rows for r in row["releases"]}))
        ctx.report(self, use.file, use.call.node,
                   f"`{use.call.callee}` ({use.op}) raises RuntimeError {phase} on CUDA under deterministic mode "
                   f"(torch.use_deterministic_algorithms(True) at {where}; listed for torch {releases}): the GPU "
                   "baseline stops at its first step.",
                   fix=use.fix)


RULES = [DeterministicOpRaises()]
