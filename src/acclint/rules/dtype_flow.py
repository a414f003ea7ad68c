"""Category `mixed-precision`: softmax-family reductions of loss code computed on fp16/bf16 logits.

A value's dtype is taken only from what the code shows: an explicit cast (`.half()`, `.bfloat16()`,
`.to(torch.bfloat16)`), a product computed under an fp16/bf16 autocast, or a name holding one of those in
the same function. A value of unknown dtype (a model's output, a parameter) is never guessed.
"""

from __future__ import annotations

from typing import Optional

from acclint.linter.context import FileContext
from acclint.linter.facts import Call, FileFacts, Value
from acclint.linter.rulebase import Example, Rule, RuleDoc
from acclint.rules.flow import assigned_before, calls_named, calls_with_method, receiver, short
from acclint.rules.mixed_precision import mp_names, mp_table

_DEPTH = 6


def low_precision(facts: FileFacts, value: Optional[Value], scope: str, order: float, depth: int = 0) -> Optional[tuple]:
    """(dtype, how the code shows it) when `value` is known to be fp16/bf16 at `order` in `scope`."""
    if value is None or depth > _DEPTH:
        return None
    table = mp_table()
    found = None
    if value.op in ("*", "/", "+", "-") and len(value.operands) == 2:  # `logits / temperature`
        left, right = value.operands
        found = low_precision(facts, left, scope, order, depth + 1) if right.is_literal else \
            low_precision(facts, right, scope, order, depth + 1) if left.is_literal else None
    elif value.op == "@" or (value.base_call and value.base_names & mp_names("autocast_lowered")):
        dtype = autocast_dtype(facts, scope, order)
        found = (dtype, "a product computed under autocast") if dtype else None
    elif value.base and "." not in value.base and not value.base_call:
        held = assigned_before(facts, value.base, scope, order)
        found = low_precision(facts, held[1], scope, held[0], depth + 1) if held is not None else None
    for index, method in enumerate(value.chain):
        if method in table["low_cast_methods"]:
            found = (table["low_cast_methods"][method], f".{method}()")
        elif method in ("to", "type"):
            found = _cast(value.chain_args[index] if index < len(value.chain_args) else (), found)
        elif method not in table["dtype_keeping"]:
            found = None  # `.float()`, or a method whose result dtype is not known here
    return found


def _cast(args: tuple, before: Optional[tuple]) -> Optional[tuple]:
    """`.to(...)`: a named dtype decides; a device or an unknown argument keeps what was known."""
    table = mp_table()
    for arg in args:
        if arg.keyword not in (None, "dtype"):
            continue
        for name in arg.value.names:
            if name in table["low_dtypes"]:
                return table["low_dtypes"][name], f".to({arg.value.dotted})"
            if name in table["fp32_dtypes"]:
                return None
    return before if not any(a.keyword in (None, "dtype") and not a.value.is_literal for a in args) else None


def autocast_dtype(facts: FileFacts, scope: str, order: float) -> Optional[str]:
    """The low dtype of an enabled fp16/bf16 autocast `with` block of `scope` that `order` runs in."""
    for block in facts.blocks:
        if block.kind == "with" and block.scope == scope and block.head_end < order < block.end:
            for item in block.items:
                dtype = _autocast_item(item)
                if dtype:
                    return dtype
    return None


def _autocast_item(item: Value) -> Optional[str]:
    if not (item.base_call and item.base_names & mp_names("autocasts")) or item.chain:
        return None
    table = mp_table()
    device = None
    for arg in item.base_args:
        if arg.keyword == "enabled" and arg.value.literal is False:
            return None
        if arg.keyword == "dtype":
            for name in arg.value.names:
                if name in table["low_dtypes"]:
                    return table["low_dtypes"][name]
            return None
        if arg.keyword in (None, "device_type") and isinstance(arg.value.literal, str) and device is None:
            device = arg.value.literal.split(":")[0]
    if any(n.startswith(("torch.cuda.", "torch.npu.")) for n in item.base_names):
        device = "cuda"
    return "float16" if device in table["fp16_default_devices"] else None


class SoftmaxOnLowPrecisionLogits(Rule):
    code = "ACL615"
    name = "softmax-on-low-precision-logits"
    category = "mixed-precision"
    severity = "info"
    maturity = "preview"
    summary = "softmax / log_softmax / cross_entropy of loss code computed on fp16/bf16 logits without .float()"
    doc = RuleDoc(
        what="Reports `F.cross_entropy`, `F.nll_loss`, `F.kl_div`, and `softmax` / `log_softmax` in loss code (a "
        "function named like a loss, or a result that flows into one), outside autocast, whose input the code "
        "shows to be fp16/bf16: cast with `.half()` / `.bfloat16()` / `.to(torch.bfloat16)`, or a matmul computed "
        "under an fp16/bf16 autocast, directly or through names of the same function. Inputs of unknown dtype are "
        "not judged; `softmax(..., dtype=torch.float32)` is fine.",
        why="Under autocast these ops run in fp32; outside it they run in the input's dtype. The kernels accumulate "
        "the reduction in fp32 internally, but the log-probabilities, their gradients and the loss are stored in "
        "bf16 (8-bit mantissa: a loss near 36 is rounded to a multiple of 0.25), and GPU and NPU kernels differ "
        "in how they split and accumulate the vocabulary reduction, so the two sides' losses drift apart in the "
        "low bits. Reference trainers upcast the logits before the loss.",
        fix="Upcast first: `F.cross_entropy(logits.float(), labels)` (or `softmax(x, dim=-1, dtype=torch.float32)`), "
        "or compute the loss inside the autocast region.",
        references=("Modalities/modalities#464 (causal-LM cross entropy on bf16 logits: loss stored at bf16 "
                    "precision; computed in fp32 after the fix)",
                    "PyTorch AMP op reference: softmax, log_softmax, nll_loss autocast to float32"),
    )
    invalid = (
        Example.script("""
            import torch
            import torch.nn.functional as F


            def compute_loss(hidden, head, labels):
                logits = head(hidden).bfloat16()
                return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))  # expect: ACL615
        """, "an explicit cast, followed through a name and a view"),
        Example.script("""
            import torch


            def distillation_loss(student, teacher_logits, weight):
                with torch.autocast("npu", dtype=torch.bfloat16):
                    logits = student @ weight
                log_p = torch.log_softmax(logits / 2.0, dim=-1)  # expect: ACL615
                return torch.nn.functional.kl_div(log_p, teacher_logits.softmax(-1), reduction="batchmean")
        """, "a product made under a bf16 autocast, its loss computed outside it"),
    )
    valid = (
        Example.script("""
            import torch
            import torch.nn.functional as F


            def compute_loss(hidden, head, labels):
                logits = head(hidden).bfloat16()
                return F.cross_entropy(logits.float().view(-1, logits.size(-1)), labels.view(-1))
        """, "upcast before the loss"),
        Example.script("""
            import torch
            import torch.nn.functional as F


            def compute_loss(model, x, labels):
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    logits = x @ model.weight
                    return F.cross_entropy(logits, labels)
        """, "inside autocast the loss runs in fp32"),
        Example.script("""
            import torch.nn.functional as F


            def compute_loss(model, x, labels):
                return F.cross_entropy(model(x), labels)
        """, "the logits' dtype is not shown: not judged"),
        Example.script("""
            import torch


            def attention(q, k):
                scores = (q @ k.transpose(-1, -2)).half()
                return scores.softmax(-1)
        """, "attention code, not loss code"),
    )

    def check_file(self, ctx: FileContext) -> None:
        facts = ctx.facts
        table = mp_table()
        functions = calls_named(facts, mp_names("softmaxes") | mp_names("loss_functions"))
        methods = [c for c in calls_with_method(facts, table["softmax_methods"]) if not c.names]
        for call in sorted(functions + methods, key=lambda c: c.order):
            if call.arg("dtype") is not None or not _loss_code(facts, call):
                continue
            if autocast_dtype(facts, call.scope, call.order):
                continue  # autocast runs these ops in fp32
            logits = receiver(call) if not call.names else _value(call.arg("input", 0))
            found = low_precision(facts, logits, call.scope, call.order)
            if found is None:
                continue
            dtype, how = found
            ctx.report(self, call.node, f"`{call.callee}` on {dtype} logits `{short(logits)}` ({how}): the result and "
                       f"its gradient are stored in {dtype}, and GPU and NPU kernels accumulate this reduction "
                       "differently; the two sides' losses differ in the low bits.",
                       fix=f"{short(logits)}.float() before the loss")


def _value(arg) -> Optional[Value]:
    return arg.value if arg is not None else None


def _loss_code(facts: FileFacts, call: Call) -> bool:
    if call.names & mp_names("loss_functions"):
        return True
    if "loss" in call.scope.rsplit(".", 1)[-1].lower():
        return True
    return any("loss" in sink.lower() or "kl_div" in sink for sink in call.sinks)


RULES = [SoftmaxOnLowPrecisionLogits()]
