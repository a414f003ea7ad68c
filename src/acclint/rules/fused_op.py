"""Category `fused-op`: fused NPU kernels compute what several composed ops compute on the GPU, but
not bit for bit, and some have defaults that differ from the composed code they replace
(docs/knowledge/fused-ops.md; the swiglu case, docs/knowledge/guides.md#the-swiglu-case). Written explicitly, so reported at its line."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import ClassVar, Optional

from acclint.knowledge import table
from acclint.linter.context import FileContext, ProgramContext
from acclint.linter.facts import Call, FileFacts
from acclint.linter.rulebase import Example, Rule, RuleDoc
from acclint.rules.flow import calls_named, in_autograd_backward, mentions_any, short, value_of
from acclint.rules.mask_kind import HELPERS, kind_of, masks


@lru_cache(maxsize=1)
def _ops() -> dict:
    return table("fused_ops")["ops"]


def _names(*families: str) -> frozenset:
    return frozenset(name for name, op in _ops().items() if not families or op["family"] in families)


def contiguous_only() -> frozenset:
    """Kernels whose docs say non-contiguous input is unsupported."""
    return frozenset(name for name, op in _ops().items() if op.get("contiguous_input"))


def _has_star(call: Call) -> bool:
    return any(a.star for a in call.args)


def _where(facts: FileFacts, call: Call) -> str:
    """Context a message adds: a config switch the call sits behind, or a custom backward."""
    parts = []
    if in_autograd_backward(facts, call.scope):
        parts.append(f"in the custom backward `{call.scope}`")
    elif call.scope.endswith(".forward") and in_autograd_backward(facts, call.scope[: -len("forward")] + "backward"):
        parts.append(f"in the custom autograd forward `{call.scope}`")
    if call.guard is not None:
        switches = sorted(m for m in call.guard.mentions if "fuse" in m.lower() or "flash" in m.lower())
        if switches:
            parts.append(f"behind `{switches[0]}`" if not call.guard.negated else f"unless `{switches[0]}`")
    return (" (" + ", ".join(parts) + ")") if parts else ""


class FusedTrap(Rule):
    """A fused-op call whose arguments (or their absence) compute something else than intended."""

    category = "fused-op"
    severity = "warning"
    families: ClassVar[tuple] = ()
    ops: ClassVar[frozenset] = frozenset()

    def calls(self, facts: FileFacts) -> list:
        return calls_named(facts, self.ops or _names(*self.families))

    def trap(self, facts: FileFacts, call: Call) -> Optional[tuple]:
        """(message, fix) when the call falls into the trap."""
        raise NotImplementedError

    def check_file(self, ctx: FileContext) -> None:
        for call in self.calls(ctx.facts):
            found = self.trap(ctx.facts, call)
            if found is not None:
                ctx.report(self, call.node, found[0] + _where(ctx.facts, call), fix=found[1])


def _api(call: Call) -> str:
    return sorted(n for n in call.names if n in _ops())[0]


_TRAINING_ATTENTION = frozenset({"torch_npu.npu_fusion_attention", "torch_npu.npu_fusion_attention_v2",
                                 "mindspeed.ops.fusion_attention_v2.npu_fusion_attention"})


class FusionAttentionScale(FusedTrap):
    code = "ACL402"
    name = "fusion-attention-default-scale"
    summary = "npu_fusion_attention with `scale` left at its default 1.0 (SDPA uses 1/sqrt(head_dim))"
    ops = _TRAINING_ATTENTION
    doc = RuleDoc(
        what="Reports `torch_npu.npu_fusion_attention` (and the v2 / MindSpeed wrappers) called without `scale`, "
        "or with `scale=1.0`.",
        why="The kernel computes softmax(scale * Q·Kᵀ) with `scale` defaulting to **1.0**; "
        "`F.scaled_dot_product_attention` and every composed GPU attention scale by **1/√head_dim** "
        "(0.088 for head_dim 128). Left at 1.0 the logits are √d times larger: the softmax is far sharper and "
        "the loss diverges from the GPU run from step 0.",
        fix="Pass `scale=1.0 / math.sqrt(head_dim)` (or the model's `softmax_scale`).",
        references=("docs/knowledge/fused-ops.md#npu_fusion_attention (trap 1)",),
    )
    invalid = (
        Example.script("""
            import torch_npu


            def attention(q, k, v, heads):
                return torch_npu.npu_fusion_attention(q, k, v, heads, "BSND", keep_prob=1.0)[0]  # expect: ACL402
        """, "scale left at its default"),
        Example.script("""
            import torch_npu as tnpu


            def attention(q, k, v, heads, mask):
                out = tnpu.npu_fusion_attention(  # expect: ACL402
                    q, k, v, heads, input_layout="SBH", atten_mask=mask, scale=1.0,
                )
                return out[0]
        """, "an alias, scale=1.0 written out"),
    )
    valid = (
        Example.script("""
            import math
            import torch_npu


            def attention(q, k, v, heads, head_dim, mask):
                return torch_npu.npu_fusion_attention(
                    q, k, v, heads, "BSND", atten_mask=mask, scale=1.0 / math.sqrt(head_dim), keep_prob=1.0,
                )[0]
        """, "scale given"),
        Example.script("""
            import torch_npu


            def attention(q, k, v, heads, **kwargs):
                return torch_npu.npu_fusion_attention(q, k, v, heads, "BSND", **kwargs)[0]
        """, "scale may come through **kwargs: not judged"),
    )

    def trap(self, facts: FileFacts, call: Call) -> Optional[tuple]:
        arg = call.arg("scale", 8)
        if arg is None:
            if _has_star(call):
                return None
            return (f"`{call.callee}` without `scale`: the kernel uses scale=1.0, while SDPA and composed GPU "
                    "attention scale logits by 1/sqrt(head_dim).", "scale=1.0 / math.sqrt(head_dim)")
        # Only a literal 1 at the call: `scale=sm_scale` set to 1 for a kernel comparison is deliberate.
        literal = arg.value.literal
        if isinstance(literal, (int, float)) and not isinstance(literal, bool) and literal == 1:
            return (f"`{call.callee}` with scale=1.0: SDPA and composed GPU attention scale logits by "
                    "1/sqrt(head_dim).", "scale=1.0 / math.sqrt(head_dim)")
        return None


_DROP_NAME = re.compile(r"(drop|(^|_)p$|^p$)", re.IGNORECASE)


class FusionAttentionKeepProb(FusedTrap):
    code = "ACL403"
    name = "fusion-attention-keep-prob"
    summary = "npu_fusion_attention `keep_prob` given a dropout probability"
    ops = _TRAINING_ATTENTION
    doc = RuleDoc(
        what="Reports `keep_prob` of `npu_fusion_attention` given a value that reads as a dropout probability: "
        "a literal below 0.5, or a name such as `attention_dropout` / `dropout_p` / `p`.",
        why="`keep_prob` is the probability to **keep** an attention weight (MindSpeed passes "
        "`1 - attention_dropout.p`). PyTorch's `dropout_p` (SDPA) and Megatron's `--attention-dropout 0.1` are the "
        "probability to **drop**. Passing 0.1 keeps 10% of the weights instead of 90% and rescales them by 10x.",
        fix="Pass `keep_prob=1.0 - dropout_p` (1.0 when dropout is off).",
    )
    invalid = (
        Example.script("""
            import torch_npu


            class Attention:
                def forward(self, q, k, v):
                    return torch_npu.npu_fusion_attention(  # expect: ACL403
                        q, k, v, self.heads, "SBH", scale=self.scale, keep_prob=self.attention_dropout,
                    )[0]
        """, "a dropout attribute passed as keep_prob"),
        Example.script("""
            import torch_npu


            def attention(q, k, v, heads, scale):
                p = 0.1
                return torch_npu.npu_fusion_attention(q, k, v, heads, "BSND", scale=scale, keep_prob=p)[0]  # expect: ACL403
        """, "a literal followed through a local name"),
    )
    valid = (
        Example.script("""
            import torch_npu


            class Attention:
                def forward(self, q, k, v):
                    return torch_npu.npu_fusion_attention(
                        q, k, v, self.heads, "SBH", scale=self.scale, keep_prob=1.0 - self.attention_dropout,
                    )[0]
        """, "1 - dropout"),
    )

    def trap(self, facts: FileFacts, call: Call) -> Optional[tuple]:
        arg = call.arg("keep_prob", 9)
        if arg is None:
            return None
        value = value_of(facts, arg.value, call)
        literal = value.literal
        fix = "keep_prob=1.0 - dropout_p"
        if isinstance(literal, (int, float)) and not isinstance(literal, bool) and 0 <= literal < 0.5:
            return (f"`{call.callee}` with keep_prob={literal}: keep_prob is the probability to KEEP, so this "
                    f"drops {1 - literal:.0%} of attention weights (a dropout probability of {literal} means "
                    f"keep_prob={1 - literal:g}).", fix)
        name = (arg.value.dotted or "").rsplit(".", 1)[-1]
        if name and _DROP_NAME.search(name) and "keep" not in name.lower():
            return (f"`{call.callee}` with keep_prob=`{arg.value.dotted}`, which reads as a dropout probability: "
                    "keep_prob is the probability to KEEP (1 - dropout p).", fix)
        return None


class AttentionMaskPolarity(FusedTrap):
    code = "ACL404"
    name = "fusion-attention-mask-polarity"
    summary = "An attention mask whose meaning is flipped on its way to npu_fusion_attention or SDPA"
    ops = frozenset(masks()["sinks"])
    doc = RuleDoc(
        what="Follows the mask given to `npu_fusion_attention` (`atten_mask`) or `F.scaled_dot_product_attention` "
        "(`attn_mask`) back through the function's assignments and local helpers' returns (a helper's parameters "
        "mean what its call passes: `to_fused_mask(bias)` returning `~mask.bool()`; helpers imported from the "
        "program's other modules are followed too), and reports it when "
        "what it means is the opposite of what the kernel reads: a keep mask (a `tril` causal mask, or an additive "
        "0/-inf mask turned boolean with `== 0` / `logical_not`) given to `npu_fusion_attention`, or a boolean "
        "mask that is True where positions are masked out (an additive mask built with `masked_fill(..., "
        "float('-inf'))`, `(1 - mask) * -10000` or `finfo.min` and then turned boolean with `.bool()` / `!= 0` / "
        "`< 0`, or `~keep`) given to SDPA. Masks whose meaning the code does not show (parameters, unknown "
        "calls) are not judged.",
        why="In SDPA a boolean mask is True where a position **takes part** and a float mask is **added** to the "
        "scores; in `npu_fusion_attention` True/1 means **masked out**. `.bool()` of an additive mask is True "
        "exactly where it held -inf, so the same conversion is right for one kernel and flips the other: the model "
        "attends only to padding or to the future, from the first step (huggingface/diffusers#14397: an additive "
        "mask booleanised and inverted for the NPU kernel).",
        fix="Give each kernel its own polarity: `npu_fusion_attention(atten_mask=additive.bool())` or `~keep`, "
        "`torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)` for a causal mask; "
        "`F.scaled_dot_product_attention(attn_mask=additive)` (float) or `additive == 0` / `keep` (boolean).",
        references=("huggingface/diffusers#14397 (an additive mask turned boolean flips it for npu_fusion_attention)",
                    "Ascend/pytorch#88 (SDPA boolean and additive masks on NPU)"),
    )
    invalid = (
        Example.script("""
            import torch
            import torch_npu


            def causal_attention(q, k, v, heads, scale, seq):
                mask = torch.tril(torch.ones(seq, seq)).bool()
                return torch_npu.npu_fusion_attention(  # expect: ACL404
                    q, k, v, heads, "BSND", atten_mask=mask, scale=scale,
                )[0]
        """, "a tril mask reaches atten_mask"),
        Example.script("""
            import torch
            import torch.nn.functional as F


            def padded_attention(q, k, v, keep):
                bias = torch.zeros(keep.shape, dtype=q.dtype).masked_fill(~keep, float("-inf"))
                mask = bias.bool()
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # expect: ACL404
        """, "an additive mask turned boolean is True where it masks: SDPA attends there"),
        Example.script("""
            import torch
            import torch_npu


            def extended_mask(attention_mask, dtype):
                return (1.0 - attention_mask[:, None, None, :]) * torch.finfo(dtype).min


            def attention(q, k, v, heads, scale, attention_mask):
                additive = extended_mask(attention_mask, q.dtype)
                keep = additive == 0
                return torch_npu.npu_fusion_attention(  # expect: ACL404
                    q, k, v, heads, "BNSD", atten_mask=keep, scale=scale,
                )[0]
        """, "through a helper's return: `== 0` makes a keep mask, which the NPU kernel reads as masked"),
        Example.script("""
            import torch
            import torch_npu
            from torch import nn


            def to_fused_mask(mask):
                return ~mask.bool()  # the SDPA habit: True = attend


            class Block(nn.Module):
                def __init__(self, dim, heads):
                    super().__init__()
                    self.heads, self.qkv = heads, nn.Linear(dim, 3 * dim)

                def forward(self, x, lengths):
                    q, k, v = self.qkv(x).chunk(3, dim=-1)
                    keep = torch.arange(x.shape[1], device=x.device)[None, :] < lengths[:, None]
                    bias = torch.zeros(keep.shape, device=x.device).masked_fill(~keep, float("-inf"))
                    return torch_npu.npu_fusion_attention(  # expect: ACL404
                        q, k, v, self.heads, "BSH", atten_mask=to_fused_mask(bias)[:, None, None, :], scale=0.25,
                    )[0]


            if __name__ == "__main__":
                model = Block(64, 4).npu()
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
                model(torch.randn(2, 16, 64).npu(), torch.tensor([16, 9]).npu()).pow(2).mean().backward()
                optimizer.step()
        """, "an additive mask handed to a helper that converts its argument: the helper's return means what "
            "the argument means, converted"),
        Example({
            "train.py": """
                import torch
                import torch_npu
                from torch import nn

                from masks import padding_bias


                class Block(nn.Module):
                    def __init__(self, dim, heads):
                        super().__init__()
                        self.heads, self.qkv = heads, nn.Linear(dim, 3 * dim)

                    def forward(self, x, lengths):
                        q, k, v = self.qkv(x).chunk(3, dim=-1)
                        mask = (padding_bias(lengths, x.shape[1]) == 0)[:, None, None, :]
                        return torch_npu.npu_fusion_attention(  # expect: ACL404
                            q, k, v, self.heads, "BSH", atten_mask=mask, scale=0.25,
                        )[0]


                if __name__ == "__main__":
                    model = Block(64, 4).npu()
                    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
                    model(torch.randn(2, 16, 64).npu(), torch.tensor([16, 9]).npu()).pow(2).mean().backward()
                    optimizer.step()
            """,
            "masks.py": """
                import torch


                def padding_bias(lengths, seq):
                    keep = torch.arange(seq, device=lengths.device)[None, :] < lengths[:, None]
                    return torch.zeros(keep.shape, device=lengths.device).masked_fill(~keep, float("-inf"))
            """,
        }, "the additive mask built by a helper of another module: `== 0` makes the keep mask SDPA wants, which "
            "the NPU kernel reads as masked"),
    )
    valid = (
        Example.script("""
            import torch
            import torch_npu


            def causal_attention(q, k, v, heads, scale, seq):
                mask = torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1)
                return torch_npu.npu_fusion_attention(q, k, v, heads, "BSND", atten_mask=mask, scale=scale)[0]
        """, "triu, diagonal=1: True = masked"),
        Example.script("""
            import torch
            import torch_npu


            def causal_attention(q, k, v, heads, scale, seq):
                keep = torch.tril(torch.ones(seq, seq)).bool()
                return torch_npu.npu_fusion_attention(q, k, v, heads, "BSND", atten_mask=~keep, scale=scale)[0]
        """, "the SDPA mask inverted"),
        Example.script("""
            import torch
            import torch.nn.functional as F
            import torch_npu


            def attention(q, k, v, heads, scale, attention_mask, on_npu):
                additive = (1.0 - attention_mask[:, None, None, :]) * -10000.0
                if on_npu:
                    return torch_npu.npu_fusion_attention(
                        q, k, v, heads, "BNSD", atten_mask=additive.bool(), scale=scale,
                    )[0]
                return F.scaled_dot_product_attention(q, k, v, attn_mask=additive)
        """, "each kernel gets its own polarity"),
        Example.script("""
            import torch.nn.functional as F


            def attention(q, k, v, mask):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask.bool())
        """, "a parameter: its meaning is not known here"),
        Example.script("""
            import torch
            import torch_npu
            from torch import nn


            def to_fused_mask(mask):
                return mask.bool()  # True where the additive mask holds -inf: masked, as the NPU kernel reads it


            class Block(nn.Module):
                def __init__(self, dim, heads):
                    super().__init__()
                    self.heads, self.qkv = heads, nn.Linear(dim, 3 * dim)

                def forward(self, x, lengths):
                    q, k, v = self.qkv(x).chunk(3, dim=-1)
                    keep = torch.arange(x.shape[1], device=x.device)[None, :] < lengths[:, None]
                    bias = torch.zeros(keep.shape, device=x.device).masked_fill(~keep, float("-inf"))
                    return torch_npu.npu_fusion_attention(
                        q, k, v, self.heads, "BSH", atten_mask=to_fused_mask(bias)[:, None, None, :], scale=0.25,
                    )[0]


            if __name__ == "__main__":
                model = Block(64, 4).npu()
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
                model(torch.randn(2, 16, 64).npu(), torch.tensor([16, 9]).npu()).pow(2).mean().backward()
                optimizer.step()
        """, "the same helper keeping the additive mask's polarity"),
        Example({
            "train.py": """
                import torch
                import torch_npu
                from torch import nn

                from masks import padding_bias


                class Block(nn.Module):
                    def __init__(self, dim, heads):
                        super().__init__()
                        self.heads, self.qkv = heads, nn.Linear(dim, 3 * dim)

                    def forward(self, x, lengths):
                        q, k, v = self.qkv(x).chunk(3, dim=-1)
                        mask = padding_bias(lengths, x.shape[1]).bool()[:, None, None, :]
                        return torch_npu.npu_fusion_attention(
                            q, k, v, self.heads, "BSH", atten_mask=mask, scale=0.25,
                        )[0]


                if __name__ == "__main__":
                    model = Block(64, 4).npu()
                    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
                    model(torch.randn(2, 16, 64).npu(), torch.tensor([16, 9]).npu()).pow(2).mean().backward()
                    optimizer.step()
            """,
            "masks.py": """
                import torch


                def padding_bias(lengths, seq):
                    keep = torch.arange(seq, device=lengths.device)[None, :] < lengths[:, None]
                    return torch.zeros(keep.shape, device=lengths.device).masked_fill(~keep, float("-inf"))
            """,
        }, "a helper of another module builds the additive mask; `.bool()` is True where it masks, as the NPU "
            "kernel reads it"),
    )

    def check_program(self, ctx: ProgramContext) -> None:
        """The program's files again, with helpers imported from its other modules followed (the project
        resolves them); findings a file shows alone are the same findings, reported once."""
        project = ctx.project
        token = HELPERS.set(lambda facts, callee, scope: project.local_target(facts, callee, scope, {}))
        try:
            for facts in ctx.program.files:
                for call in self.calls(facts):
                    found = self.trap(facts, call)
                    if found is not None:
                        ctx.report(self, facts, call.node, found[0] + _where(facts, call), fix=found[1])
        finally:
            HELPERS.reset(token)

    def trap(self, facts: FileFacts, call: Call) -> Optional[tuple]:
        sinks = masks()["sinks"]
        api = next((name for name in sorted(call.names) if name in sinks), None)
        if api is None:
            return None
        sink = sinks[api]
        arg = call.arg(sink["argument"], sink["position"])
        if arg is None:
            return None
        kind = kind_of(facts, arg.value, call.scope, call.order)
        if kind is None or kind.meaning != sink["flipped"] or (sink["boolean_only"] and kind.boolean is not True):
            return None
        held = "takes part" if kind.meaning == "keep" else "is masked out"
        return (f"`{call.callee}` gets {sink['argument']} `{short(arg.value)}`, which is true where a position {held} "
                f"(built by {kind.how}); this kernel reads a mask as {sink['attends']}, so attention is flipped.",
                _MASK_FIXES[kind.meaning])


_MASK_FIXES = {
    "keep": "atten_mask=~keep (True = masked), or additive.bool() for an additive 0/-inf mask",
    "drop": "attn_mask=the additive float mask itself, or additive == 0 / ~drop (True = attend)",
}


class GegluDefaults(FusedTrap):
    code = "ACL405"
    name = "npu-geglu-defaults"
    summary = "npu_geglu relying on its defaults (right half activated, tanh GELU)"
    ops = frozenset({"torch_npu.npu_geglu"})
    doc = RuleDoc(
        what="Reports `torch_npu.npu_geglu` called without both `approximate` and `activate_left`.",
        why="By default the kernel returns `left * gelu_tanh(right)`: `activate_left=False` activates the "
        "**right** half and `approximate=1` uses the **tanh** GELU. The common GeGLU (`a, b = x.chunk(2, -1); "
        "F.gelu(a) * b`) activates the **left** half with the exact (erf) GELU, so the defaults compute another "
        "function.",
        fix="Write both: `torch_npu.npu_geglu(x, dim=-1, approximate=0, activate_left=True)` for "
        "`F.gelu(a) * b`.",
    )
    invalid = (
        Example.script("""
            import torch_npu


            def geglu(x):
                return torch_npu.npu_geglu(x, dim=-1)[0]  # expect: ACL405
        """),
    )
    valid = (
        Example.script("""
            import torch_npu


            def geglu(x):
                return torch_npu.npu_geglu(x, dim=-1, approximate=0, activate_left=True)[0]
        """),
    )

    def trap(self, facts: FileFacts, call: Call) -> Optional[tuple]:
        approximate, left = call.arg("approximate", 2), call.arg("activate_left", 3)
        if (approximate is not None and left is not None) or _has_star(call):
            return None
        missing = [n for n, a in (("approximate", approximate), ("activate_left", left)) if a is None]
        return (f"`{call.callee}` relies on the default {' and '.join(missing)}: it computes "
                "left * gelu_tanh(right), while a composed GeGLU is usually F.gelu(left) * right (erf).",
                "npu_geglu(x, dim=-1, approximate=0, activate_left=True)")


_EPS_NAME = re.compile(r"eps", re.IGNORECASE)


class RmsNormEpsilon(FusedTrap):
    code = "ACL406"
    name = "npu-rms-norm-default-epsilon"
    summary = "npu_rms_norm using its default epsilon 1e-6 while the model configures its own"
    ops = frozenset({"torch_npu.npu_rms_norm", "mindspore.ops.rms_norm"})
    doc = RuleDoc(
        what="Reports `torch_npu.npu_rms_norm` (or `mindspore.ops.rms_norm`) called without `epsilon` inside a "
        "function or class that has an epsilon of its own (a parameter or attribute named like `eps`).",
        why="The kernel's default epsilon is **1e-6**. Megatron's `--norm-epsilon` defaults to **1e-5**, "
        "`torch.nn.RMSNorm` uses `torch.finfo(dtype).eps`, and HF configs set `rms_norm_eps` per model. "
        "The model's value is silently replaced by 1e-6 in the fused path only, so GPU and NPU normalise "
        "differently (visible on small-variance activations).",
        fix="Pass the model's value: `torch_npu.npu_rms_norm(x, self.weight, epsilon=self.eps)[0]`.",
    )
    invalid = (
        Example.script("""
            import torch
            import torch_npu


            class RMSNorm(torch.nn.Module):
                def __init__(self, dim, eps=1e-5, use_fused_rmsnorm=True):
                    super().__init__()
                    self.eps = eps
                    self.use_fused_rmsnorm = use_fused_rmsnorm
                    self.weight = torch.nn.Parameter(torch.ones(dim))

                def forward(self, x):
                    if self.use_fused_rmsnorm:
                        return torch_npu.npu_rms_norm(x, self.weight)[0]  # expect: ACL406
                    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
        """, "a fused norm behind a config switch, the model's eps not passed"),
    )
    valid = (
        Example.script("""
            import torch
            import torch_npu


            class RMSNorm(torch.nn.Module):
                def __init__(self, dim, eps=1e-6):
                    super().__init__()
                    self.eps = eps
                    self.weight = torch.nn.Parameter(torch.ones(dim))

                def forward(self, x):
                    return torch_npu.npu_rms_norm(x, self.weight, epsilon=self.eps)[0]
        """),
    )

    def trap(self, facts: FileFacts, call: Call) -> Optional[tuple]:
        if call.arg("epsilon", 2) is not None or call.arg("eps") is not None or _has_star(call):
            return None
        configured = _configured_epsilon(facts, call.scope)
        if configured is None:
            return None
        return (f"`{call.callee}` without `epsilon` uses the kernel default 1e-6, not the model's `{configured}` "
                "(Megatron --norm-epsilon default 1e-5).", f"epsilon={configured}")


def _configured_epsilon(facts: FileFacts, scope: str) -> Optional[str]:
    function = facts.functions.get(scope)
    if function is not None:
        for param in function.params:
            if _EPS_NAME.search(param):
                return param
    owner = scope.rsplit(".", 1)[0] if "." in scope else None
    if owner in facts.classes:
        for assignment in facts.assignments:
            if assignment.scope.startswith(owner + ".") and assignment.target.startswith("self.") and \
                    _EPS_NAME.search(assignment.target.rsplit(".", 1)[-1]):
                return assignment.target
    return None


_TRAPS = (FusionAttentionScale(), FusionAttentionKeepProb(), AttentionMaskPolarity(), GegluDefaults(),
          RmsNormEpsilon())


class FusedOpUse(Rule):
    code = "ACL401"
    name = "fused-op"
    category = "fused-op"
    severity = "info"
    summary = "A fused NPU kernel: name the composed ops a GPU baseline computes"
    doc = RuleDoc(
        what="Reports each call of a fused kernel from the table `knowledge/fused_ops.toml` (torch_npu "
        "`npu_swiglu`, `npu_rms_norm`, `npu_rotary_mul`, `npu_fusion_attention`, MC2 `npu_all_gather_base_mm` / "
        "`npu_mm_reduce_scatter_base`, fused losses, `torch_npu.optim.NpuFused*` and apex `NpuFused*` optimizers, "
        "MindSpore `ops.swiglu` / `ops.rms_norm`, ...), with what it computes and the composed equivalent. Calls "
        "that fall into a known trap get the trap's warning (ACL402-ACL406) instead.",
        why="A fused kernel computes the same function as the composed GPU ops but not bit for bit: one rounding "
        "instead of three, fp32 internal statistics, another accumulation order (the swiglu case, docs/knowledge/guides.md#the-swiglu-case: PyTorch used "
        "`npu_swiglu` while MindSpore composed three ops; the loss gap took a full dump-and-compare to find). "
        "When aligning an NPU run with a GPU baseline, the first step is to run the composed form on both sides.",
        fix="While aligning accuracy, replace the kernel with the composed form shown (or turn off the launcher "
        "flag that selects it); switch it back on once the runs agree.",
        references=("docs/knowledge/fused-ops.md", "docs/knowledge/guides.md#the-swiglu-case"),
    )
    invalid = (
        Example.script("""
            import torch
            import torch_npu


            class SwiGLUFunction(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.save_for_backward(x)
                    return torch_npu.npu_swiglu(x, dim=-1)  # expect: ACL401

                @staticmethod
                def backward(ctx, grad_output):
                    (x,) = ctx.saved_tensors
                    return torch_npu.npu_swiglu_backward(grad_output, x, -1)  # expect: ACL401
        """, "fused kernels inside a custom autograd Function"),
        Example.script("""
            import torch_npu
            from torch_npu import npu_rms_norm as rms
            from torch_npu.optim import NpuFusedAdamW


            def column_parallel(x, weight, hcom, world_size):
                out, gathered = torch_npu.npu_all_gather_base_mm(x, weight.t(), hcom, world_size)  # expect: ACL401
                return out


            def loss(logits, labels, classes):
                one_hot = torch_npu.npu_one_hot(labels, depth=classes)  # expect: ACL401
                return torch_npu.npu_softmax_cross_entropy_with_logits(logits, one_hot).mean()  # expect: ACL401


            def norm(x, weight):
                return rms(x, weight, epsilon=1e-5)[0]  # expect: ACL401


            def optimizer(model):
                return NpuFusedAdamW(model.parameters(), lr=1e-4)  # expect: ACL401
        """, "MC2, fused losses, an aliased norm, a fused optimizer"),
    )
    valid = (
        Example.script("""
            import torch
            import torch.nn.functional as F


            def swiglu(x):
                a, b = torch.chunk(x, 2, dim=-1)
                return F.silu(a) * b


            def rms_norm(x, weight, eps):
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
        """, "composed forms"),
    )

    def check_file(self, ctx: FileContext) -> None:
        facts = ctx.facts
        ops = _ops()
        for call in calls_named(facts, _names()):
            if any(call.names & trap.ops and trap.trap(facts, call) is not None for trap in _TRAPS):
                continue  # the trap's warning is this place's finding
            api = _api(call)
            op = ops[api]
            message = (f"`{call.callee}` is a fused kernel{_where(facts, call)}: {op['computes']}. "
                       f"A GPU baseline computes {op['composed']}; {op['notes']}.")
            ctx.report(self, call.node, message, fix=f"while aligning accuracy, use {op['composed']}")

    def check_shell(self, ctx: ProgramContext, shell) -> None:
        flags = table("fused_ops")["flags"]
        for launch in shell.script.launches:
            for name, value in launch.flags().items():
                entry = flags.get(name)
                if entry is None:
                    continue
                op = _ops().get(entry.get("op", ""))
                composed = f" A GPU (Megatron) run computes {op['composed']}." if op else ""
                ctx.report_shell(self, value.span, f"--{name}: {entry['note']}.{composed}",
                                 fix=f"while aligning accuracy with a GPU run, drop --{name}")


# Launch-script example: MindSpeed's fused switches at their line.
FusedOpUse.invalid = FusedOpUse.invalid + (
    Example(
        {
            "pretrain_llama.sh": """
                #!/bin/bash
                source /usr/local/Ascend/ascend-toolkit/set_env.sh
                export HCCL_DETERMINISTIC=true
                GPT_ARGS=(
                    --num-layers 32 --hidden-size 4096 --swiglu --normalization RMSNorm
                    --use-fused-swiglu  # expect: ACL401
                    --use-fused-rmsnorm  # expect: ACL401
                    --use-flash-attn  # expect: ACL401
                    --bf16
                )
                torchrun --nproc_per_node 8 pretrain_gpt.py "${GPT_ARGS[@]}" --seed 1234
            """,
        },
        "a MindSpeed launch script (flags reported at their lines)",
    ),
)

_GELUS = frozenset({"torch.nn.functional.gelu", "torch.nn.GELU"})


class NativeGeluOnNpu(Rule):
    code = "ACL407"
    name = "native-gelu-on-npu"
    category = "fused-op"
    severity = "info"
    summary = "Native GELU in an NPU file: the NPU kernel may compute the tanh form whatever `approximate` says"
    doc = RuleDoc(
        what="Reports `F.gelu(...)` / `nn.GELU(...)` without `approximate='tanh'` in a file that uses torch_npu.",
        why="The op-plugin notice for `npu_gelu` says that on NPU the native `torch.nn.functional.gelu` ignores "
        "`approximate` and computes the **tanh** approximation, while the GPU computes the exact **erf** GELU "
        "(`approximate='none'`, the default); `torch_npu.npu_gelu(x, approximate='none')` gives explicit control. "
        "The torch_npu versions the notice applies to are not documented (docs/knowledge/README.md#open-points), hence info.",
        fix="Where erf-GELU parity matters, call `torch_npu.npu_gelu(x, approximate='none')` on the NPU side, or "
        "use the tanh form on both sides.",
        references=("docs/knowledge/fused-ops.md#npu_gelu",),
    )
    invalid = (
        Example.script("""
            import torch
            import torch.nn.functional as F
            import torch_npu


            def mlp(x, w1, w2):
                return F.gelu(x @ w1) @ w2  # expect: ACL407
        """),
    )
    valid = (
        Example.script("""
            import torch.nn.functional as F
            import torch_npu


            def mlp(x, w1, w2):
                return torch_npu.npu_gelu(x @ w1, approximate="none") @ w2, F.gelu(x, approximate="tanh")
        """),
        Example.script("""
            import torch.nn.functional as F


            def mlp(x, w1, w2):
                return F.gelu(x @ w1) @ w2
        """, "a GPU-only file"),
    )

    def check_file(self, ctx: FileContext) -> None:
        facts = ctx.facts
        if not mentions_any(facts, ("torch_npu", "torch.npu")):
            return
        for call in calls_named(facts, _GELUS):
            approximate = call.arg("approximate", 1 if "functional" in next(iter(call.names)) else 0)
            if approximate is not None and (approximate.value.literal == "tanh" or not approximate.value.is_literal):
                continue
            if _has_star(call):
                continue
            ctx.report(self, call.node, f"`{call.callee}` in an NPU file: per the op-plugin notice the NPU kernel "
                       "computes the tanh GELU whatever `approximate` says; the GPU computes the erf GELU.",
                       fix="torch_npu.npu_gelu(x, approximate='none') where erf parity matters")


RULES = [FusedOpUse(), *_TRAPS, NativeGeluOnNpu()]
