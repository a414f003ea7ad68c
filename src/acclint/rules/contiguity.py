"""Category `contiguity`: a transposed view (`.t()`, `.T`, `.transpose()`, `.permute()`, ...) is the
same memory read with other strides. Where it reaches code that depends on the layout, results
differ between devices or raise (docs/knowledge/guides.md#the-glm4-contiguity-case: the GLM4 `.t()` without `.contiguous()` in a
ColumnParallelLinear backward). Names are followed through assignments within a function."""

from __future__ import annotations

from typing import ClassVar

from acclint.linter.context import FileContext
from acclint.linter.edits import ChainMethod, safe_fix, unsafe_fix
from acclint.linter.facts import Call, Value
from acclint.linter.rulebase import Example, Rule, RuleDoc
from acclint.rules.flow import (STRIDE_KEEPING, TRANSPOSING, TRANSPOSING_FUNCTIONS, LayoutEvent, in_autograd_backward,
                                layout_events, receiver, short)
from acclint.rules.fused_op import contiguous_only
from acclint.rules.view_merge import view_must_raise

_MATMUL_METHODS = frozenset({"matmul", "mm", "bmm"})
_MATMUL_FUNCTIONS = frozenset({"torch.matmul", "torch.mm", "torch.bmm", "torch.addmm", "torch.baddbmm",
                               "torch.nn.functional.linear"})
_COLLECTIVES = frozenset(
    f"torch.distributed.{name}" for name in (
        "all_reduce", "all_gather", "all_gather_into_tensor", "_all_gather_base", "reduce_scatter",
        "reduce_scatter_tensor", "_reduce_scatter_base", "broadcast", "all_to_all", "all_to_all_single",
        "reduce", "send", "recv", "isend", "irecv", "gather", "scatter")
)


class ContiguityRule(Rule):
    category = "contiguity"
    severity = "warning"
    tensor_framework = "torch"  # strides and views are torch's; mindspore.Tensor.view is a reshape
    fix_text: ClassVar[str] = "add `.contiguous()` after the transpose"

    def matches(self, ctx: FileContext, event: LayoutEvent) -> str:
        """The message when the event is this rule's case, else ''."""
        raise NotImplementedError

    def check_file(self, ctx: FileContext) -> None:
        for event in layout_events(ctx.facts):
            message = self.matches(ctx, event)
            if message:
                ctx.report(self, event.call.node, message, fix=self.fix_text)


def _is_dtype_view(event: LayoutEvent) -> bool:
    args = [a for a in event.call.args if not a.star]
    return len(args) == 1 and args[0].keyword in (None, "dtype") and any(
        n.startswith(("torch.", "mindspore.")) for n in args[0].value.names)


class TransposedView(ContiguityRule):
    code = "ACL501"
    name = "transposed-view"
    summary = "`.view()` on a transposed tensor"
    fix_text = "`.contiguous().view(...)` or `.reshape(...)`"
    doc = RuleDoc(
        what="Reports `.view(...)` called on a tensor that is a transposed view: produced by `.t()`, `.T`, `.mT`, "
        "`.transpose()`, `.permute()`, `.swapaxes()`, `.movedim()`, directly or through a local name. A "
        "`.contiguous()` taken before the transpose (`x.contiguous().transpose(1, 2).view(...)`) fixes the other "
        "layout and does not count. A warning where the view cannot work: it flattens (`.view(-1)`, one size), or "
        "it needs to merge dims the transposition put out of order, as the attention-head merge "
        "`attn.transpose(1, 2).view(b, t, c)` does (read from literal `transpose`/`swapaxes`/`permute` dims and "
        "the number of sizes; every rank the dims allow is tried) on a tensor the function made with `.contiguous()` "
        "or a matmul. Otherwise info: a view to more sizes may only split dims, which is valid on any strides, and "
        "a parameter, an attribute or another function's result may arrive transposed, so that the transpose turns "
        "it back. MindSpore code is not checked (`mindspore.Tensor.view` is a "
        "reshape).",
        why="`view` reinterprets the existing strides. On a transposed tensor it raises "
        "(\"view size is not compatible with input tensor's size and stride\") unless the transposed dims happen to "
        "be of size 1, so whether it runs depends on shapes that differ between a GPU recipe and an NPU recipe "
        "(TP size, sequence layout SBH vs BSH); where it runs, the result depends on the layout the kernel produced, "
        "which torch_npu may choose differently (private formats).",
        fix="Make the layout explicit: `x.transpose(0, 1).contiguous().view(...)`, or use `.reshape(...)`. "
        "`--fix` inserts `.contiguous()` before `.view(` on warnings (a view that raises has no result to "
        "change); on info findings that is an unsafe fix, because a view that works shares memory with the "
        "original and in-place writes through the copy would no longer reach it.",
    )
    invalid = (
        Example.script("""
            import torch


            def merge_heads(probs, value_states, bsz, q_len, hidden):
                attn_out = torch.matmul(probs, value_states)
                attn_out = attn_out.transpose(1, 2).view(bsz, q_len, hidden)  # expect: ACL501
                return attn_out


            def merge_heads_made_contiguous_too_early(context, batch, seq, hidden):
                return context.contiguous().transpose(1, 2).view(batch, seq, hidden)  # expect: ACL501


            def through_a_name(scores, value_states, b, t, c):
                y = torch.matmul(scores, value_states).permute(0, 2, 1, 3)
                y = y.view(b, t, c)  # expect: ACL501
                return y


            def flatten(x):
                return x.transpose(0, 1).view(-1)  # expect: ACL501
        """, "the attention-head merge, with `.contiguous()` in the layout before the transpose, through a "
            "local name, and a flattening view"),
    )
    valid = (
        Example.script("""
            import torch


            def merge_heads(context, batch, seq, hidden):
                context = context.permute(0, 2, 1, 3).contiguous()
                out = context.view(batch, seq, hidden)
                return out.transpose(0, 1).reshape(-1), out.t().view(torch.int32)


            def merge_heads_contiguous_after(attn_out, bsz, q_len, hidden):
                return attn_out.transpose(1, 2).contiguous().view(bsz, q_len, hidden)


            def rope_on_batch_first(q, rope):
                q = q.transpose(0, 1)
                q[..., -64:] = rope(q[..., -64:])
                q = q.transpose(0, 1)  # back to the original layout
                return q.view(*q.shape[:2], -1)
        """, "contiguous after the transpose, reshape, a dtype view, a transpose undone"),
        Example.script("""
            from mindspore import nn, ops


            class SarHead(nn.Cell):
                def construct(self, attn, w):
                    attn = attn.transpose((0, 1, 3, 2))
                    return ops.softmax(attn.view((-1, w)), axis=-1)


            class Attention(nn.Cell):
                def construct(self, out, b, t, c):
                    return out.transpose(0, 2, 1, 3).view(b, t, c)
        """, "MindSpore code: mindspore.Tensor.view is a reshape and never depends on strides"),
    )

    def matches(self, ctx: FileContext, event: LayoutEvent) -> str:
        call = event.call
        if call.method != "view" or not event.receiver_transposed or _is_dtype_view(event):
            return ""
        return (f"`.view()` on `{short(receiver(call))}`, a transposed (non-contiguous) view: it raises unless the "
                "shape change only splits dims or the swapped dims have size 1, and NPU kernels may return other "
                "strides than CUDA ones.")

    def check_file(self, ctx: FileContext) -> None:
        for event in layout_events(ctx.facts):
            message = self.matches(ctx, event)
            if message:
                raises = _view_raises(ctx, event)
                # Where the view raises, `.contiguous()` changes nothing else; where it may work (it only splits
                # dims), its result aliases the original and in-place writes through it would stop reaching it.
                autofix = (safe_fix if raises else unsafe_fix)("add .contiguous() before .view()",
                                                               ChainMethod(method="contiguous"))
                ctx.report(self, event.call.node, message, fix=self.fix_text, severity=None if raises else "info",
                           autofix=autofix)


def _view_raises(ctx: FileContext, event: LayoutEvent) -> bool:
    """The view cannot work on this transposed tensor: it flattens (`.view(-1)`, one literal size), or it
    merges dims the transposition put out of order, as the attention-head merge `.transpose(1, 2).view(b, t, c)`
    does on a tensor this function made."""
    shape = [a for a in event.call.args if a.keyword is None]
    if any(a.star for a in shape):
        return False
    if len(shape) == 1:
        # One literal int merges every dim, which a real transposition forbids; one name (`x.view(shape)`)
        # may be a whole shape.
        return type(shape[0].value.literal) is int
    transposer = _transposer(ctx, event.call)
    return transposer is not None and _made_here(ctx, transposer) and view_must_raise(transposer, len(shape))


_CASTS = STRIDE_KEEPING - {"[]"}  # a subscript may drop dims: the rank would be unknown


def _transposer(ctx: FileContext, view: Call):
    """The one transposing call the viewed tensor comes from, with nothing but casts after it: in the
    chain (`x.transpose(1, 2).float().view(...)`), or assigned to the viewed name in the same function."""
    value = receiver(view)
    if value is None or value.base_call or any(m not in _CASTS for m in _after_last_transpose(value.chain)):
        return None
    if value.chain and sum(m in TRANSPOSING for m in value.chain) == 1:
        spans = ctx.facts.spans
        start = _start(spans[view.node])
        inner = [c for c in ctx.facts.calls if c.scope == view.scope and c.method in TRANSPOSING
                 and c is not view and _start(spans[c.node]) == start]  # the chain's calls, wherever recorded
        return max(inner, key=lambda c: (spans[c.node].end_line, spans[c.node].end_column), default=None)
    if any(m in TRANSPOSING for m in value.chain):
        return None
    last = _last_assigned(ctx, view, value.base)
    return last if last is not None and last.method in TRANSPOSING and not _transposes(last.receiver) else None


def _made_here(ctx: FileContext, transposer: Call) -> bool:
    """The tensor before the transposition has the layout the proof assumes (contiguous): made contiguous or
    computed by a matmul in the chain, or a local name last assigned such a value with no transposition of
    it in this function. A parameter's, an attribute's or another function's result's strides are not
    known here (it may return a transposed view, which the transposition turns back)."""
    value = transposer.receiver or Value(base=transposer.callee.rsplit(".", 1)[0])
    if _transposes(value):
        return False
    if _fresh(value):
        return True
    function = ctx.facts.functions.get(transposer.scope)
    if value.base is None or value.base_call or "." in value.base or function is None or value.base in function.params:
        return False
    assigned = [a.value for a in ctx.facts.name_assignments
                if a.scope == transposer.scope and a.name == value.base and a.order < transposer.order]
    if not assigned or any(_transposes(v) or v.base_names & TRANSPOSING_FUNCTIONS for v in assigned):
        return False
    return _fresh(assigned[-1])


# What returns new memory in the logical order: `.contiguous()` and matmuls (`torch.matmul(probs, v)`).
_FRESH_METHODS = frozenset({"contiguous"}) | _MATMUL_METHODS
_FRESH_FUNCTIONS = _MATMUL_FUNCTIONS | {"torch.einsum"}


def _fresh(value: Value) -> bool:
    return bool(_FRESH_METHODS.intersection(value.chain)) or value.base_call and bool(
        value.base_names & _FRESH_FUNCTIONS)


def _transposes(value) -> bool:
    return value is not None and any(m in TRANSPOSING for m in value.chain)


def _calls_before(ctx: FileContext, call: Call) -> list:
    return [c for c in ctx.facts.calls if c.scope == call.scope and c.order < call.order]


def _last_assigned(ctx: FileContext, call: Call, name: str):
    return max((c for c in _calls_before(ctx, call) if c.assigned_to == name), key=lambda c: c.order, default=None)


def _start(where) -> tuple:
    return where.line, where.column


def _after_last_transpose(chain: tuple) -> tuple:
    for index in range(len(chain) - 1, -1, -1):
        if chain[index] in TRANSPOSING:
            return chain[index + 1:]
    return chain


class TransposedMatmulInBackward(ContiguityRule):
    code = "ACL502"
    name = "transposed-matmul-in-backward"
    summary = "A transposed tensor reaches a matmul in a custom autograd backward without `.contiguous()`"
    doc = RuleDoc(
        what="Reports, inside `backward` of a `torch.autograd.Function`, a matmul (`.matmul`, `.mm`, `.bmm`, "
        "`torch.matmul`, `@`) whose operand is a transposed view of the incoming gradient (a parameter of "
        "`backward`, or a name containing `grad`) without `.contiguous()`. Transposed weights and saved inputs "
        "(`grad_output.matmul(weight)`, `torch.matmul(dy, w.t())`) are how every linear backward is written and "
        "are not reported.",
        why="Hand-written backwards (Megatron's `LinearWithGradAccumulationAndAsyncCommunication`, custom fused "
        "layers) compute weight gradients as `grad_output.t().matmul(total_input)`. In the GLM4 alignment case "
        "(docs/knowledge/guides.md) the first step's loss matched but the second step's grad norm did not: the PyTorch side ran "
        "the matmul on the non-contiguous `.t()` view, the MindSpore side made it contiguous first, and only dW "
        "differed. Adding `.contiguous()` made both sides equal.",
        fix="`grad_weight = grad_output.t().contiguous().matmul(total_input)`.",
        references=("docs/knowledge/guides.md#the-glm4-contiguity-case",),
    )
    invalid = (
        Example.script("""
            import torch


            class LinearWithGradAccumulation(torch.autograd.Function):
                @staticmethod
                def forward(ctx, input, weight, bias):
                    ctx.save_for_backward(input, weight)
                    return torch.matmul(input, weight.t()) + bias

                @staticmethod
                def backward(ctx, grad_output):
                    input, weight = ctx.saved_tensors
                    grad_input = grad_output.matmul(weight)
                    grad_output = grad_output.contiguous()
                    grad_output = grad_output.view(grad_output.shape[0] * grad_output.shape[1], grad_output.shape[2])
                    total_input = input.view(input.shape[0] * input.shape[1], input.shape[2])
                    grad_weight = grad_output.t().matmul(total_input)  # expect: ACL502
                    grad_bias = grad_output.sum(dim=0)
                    return grad_input, grad_weight, grad_bias
        """, "a Megatron-style ColumnParallelLinear backward (the GLM4 case)"),
        Example.script("""
            from torch.autograd import Function


            class Projection(Function):
                @staticmethod
                def backward(ctx, grad):
                    x, w = ctx.saved_tensors
                    g_t = grad.transpose(-1, -2)
                    return grad @ w, g_t @ x  # expect: ACL502
        """, "through a local name and the @ operator"),
    )
    valid = (
        Example.script("""
            import torch


            class LinearWithGradAccumulation(torch.autograd.Function):
                @staticmethod
                def forward(ctx, input, weight):
                    ctx.save_for_backward(input, weight)
                    return torch.matmul(input, weight.t())

                @staticmethod
                def backward(ctx, grad_output):
                    input, weight = ctx.saved_tensors
                    grad_input = grad_output.matmul(weight)
                    grad_weight = grad_output.t().contiguous().matmul(input)
                    return grad_input, grad_weight


            class GroupedMLP(torch.autograd.Function):
                @staticmethod
                def backward(ctx, grad_outs):
                    inputs, weights = ctx.saved_tensors
                    grad_inputs = torch.matmul(grad_outs, weights.t())
                    grad_weights = torch.matmul(inputs.t(), grad_outs)
                    return grad_inputs, grad_weights


            def attention(q, k):
                return torch.softmax(q @ k.transpose(-2, -1), dim=-1)
        """, "`.contiguous()` on the gradient; transposed weights/inputs in a backward and a transposed key in a "
            "forward pass are normal"),
    )

    def matches(self, ctx: FileContext, event: LayoutEvent) -> str:
        call = event.call
        is_matmul = call.callee == "@" or call.method in _MATMUL_METHODS and not call.names or \
            bool(call.names & _MATMUL_FUNCTIONS)
        if not is_matmul or not in_autograd_backward(ctx.facts, call.scope):
            return ""
        operands = ([(short(receiver(call)), event.receiver_transposed)] if event.receiver_transposed else []) + \
            [(short(a.value), root) for a, root in zip(event.transposed_args, event.roots)]
        # The GLM4 case is the incoming gradient transposed (`grad_output.t()`); a transposed parameter or saved
        # input (`weight.t()`, the usual dX = dY @ W^T) is how every linear backward is written.
        incoming = _incoming_gradients(ctx.facts, call.scope)
        gradients = [(text, root) for text, root in operands if root in incoming or "grad" in root.lower()]
        if not gradients:
            return ""
        return (f"matmul on the transposed gradient `{gradients[0][0]}` in `{call.scope}` without `.contiguous()`: "
                "the weight gradient depends on its layout (the GLM4 case: dW differed until `.contiguous()` was "
                "added).")


def _incoming_gradients(facts, scope: str) -> set:
    function = facts.functions.get(scope)
    return set(function.params[1:]) if function is not None else set()


class TransposedIntoCollectiveOrKernel(ContiguityRule):
    code = "ACL503"
    name = "transposed-into-collective"
    summary = "A transposed tensor passed to a collective or an NPU fused kernel"
    doc = RuleDoc(
        what="Reports a transposed view passed to a `torch.distributed` collective (`all_reduce`, `all_gather`, "
        "`reduce_scatter`, `broadcast`, `all_to_all`, ...) or to a fused NPU kernel documented as not accepting "
        "non-contiguous input (`contiguous_input` in `knowledge/fused_ops.toml`, e.g. `npu_swiglu`). MC2 kernels "
        "take a transposed weight by design and are not reported.",
        why="Collectives send the tensor's storage: NCCL requires contiguous tensors and HCCL copies or rejects "
        "non-contiguous ones, so the two sides take different paths, and an in-place `all_reduce` on a view "
        "reduces into a temporary the caller never sees. Fused NPU kernels such as `npu_swiglu` do not support "
        "non-contiguous input (OPP docs).",
        fix="Pass `x.transpose(...).contiguous()`.",
    )
    invalid = (
        Example.script("""
            import torch.distributed as dist
            import torch_npu


            def reduce_grad(grad, group):
                dist.all_reduce(grad.t(), group=group)  # expect: ACL503


            def gated(x):
                y = x.transpose(0, 1)
                return torch_npu.npu_swiglu(y, dim=-1)  # expect: ACL503
        """),
    )
    valid = (
        Example.script("""
            import torch.distributed as dist
            import torch_npu


            def reduce_grad(grad, group):
                dist.all_reduce(grad.t().contiguous(), group=group)


            def gated(x):
                return torch_npu.npu_swiglu(x.transpose(0, 1).contiguous(), dim=-1)
        """),
    )

    def matches(self, ctx: FileContext, event: LayoutEvent) -> str:
        call = event.call
        if not event.transposed_args:
            return ""
        if call.names & _COLLECTIVES:
            kind = "the collective"
        elif call.names & contiguous_only():
            kind = "the fused NPU kernel"
        else:
            return ""
        return (f"`{short(event.transposed_args[0].value)}` is a transposed (non-contiguous) view passed to {kind} "
                f"`{call.callee}`.")


RULES = [TransposedView(), TransposedMatmulInBackward(), TransposedIntoCollectiveOrKernel()]
