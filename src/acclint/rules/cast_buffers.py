"""Category `mixed-precision`: float buffers built from positions that the model's cast rounds. `nn.Module.to(dtype)`,
`.half()` and `.bfloat16()` cast every floating-point buffer with the parameters, so a rotary `inv_freq`, an ALiBi
bias or a position table registered in float32 is bfloat16 after `model.to(torch.bfloat16)`, and the angles and
masks built from it in `forward` are rounded (docs/knowledge/mixed-precision.md#dtypes-that-drift-with-the-model).
ACL617 reports the positions built in the model's dtype; this rule the buffers the cast takes along."""

from __future__ import annotations

from typing import Iterator, Optional

from acclint.findings import Premise
from acclint.linter.context import ProgramContext
from acclint.linter.facts import Call, FileFacts, Value
from acclint.linter.rulebase import Example, RuleDoc
from acclint.rules.base import ProgramRule
from acclint.rules.flow import calls_with_method, receiver, value_of
from acclint.rules.mixed_precision import mp_names, mp_table
from acclint.rules.model_cast import ModelCast, mantissa_bits, model_casts, module_class_of, where
from acclint.rules.program_facts import ProgramFacts

# `.to(dtype)`, `.half()`, `.bfloat16()` cast a module's floating buffers; `from_pretrained(torch_dtype=...)`
# builds the model in that dtype and leaves buffers created in explicit float32 alone.
_BUFFER_CASTS = ("half", "bfloat16", "to")


class PositionBuffersCastWithModel(ProgramRule):
    code = "ACL622"
    name = "position-buffers-cast-with-model"
    category = "mixed-precision"
    severity = "warning"
    # Stable by declaration: where the cast and the buffer are proven, the rounding is arithmetic (8 significant
    # bits in bfloat16), not a judgement; the tuning corpus holds no proven finding of it to measure.
    maturity = "stable"
    tensor_framework = "torch"
    summary = "A float buffer built from positions (rotary inv_freq, ALiBi bias) cast to bf16/fp16 with the model"
    doc = RuleDoc(
        what="Reports `self.register_buffer(name, value)` in a model class when `value` is a floating-point tensor "
        "built from `torch.arange` (rotary frequencies `1 / base ** (arange(0, dim, 2) / dim)`, ALiBi biases "
        "`slopes * arange(n)`, position tables) and the training program casts the model with `.to(torch."
        "bfloat16)`, `.half()` or `.bfloat16()`, which cast floating buffers too, and nothing assigns the buffer "
        "again afterwards (a float32 copy put back, or the buffer recomputed). A `.float()` where the buffer is used "
        "does not count: the bits the cast dropped do not come back. Integer buffers (`torch.arange(n)`) are not "
        "cast and are left alone.",
        why="bfloat16 keeps 8 significant bits, so each cast frequency is off by up to 2**-8 ≈ 0.4% of itself "
        "(float16: 2**-11). The rotary angle position * inv_freq carries that error times the position: for the "
        "highest frequency (inv_freq = 1) at position 2048 the angle is off by up to 2048 * 2**-8 = 8 rad in "
        "bfloat16 (1 rad in float16), so far tokens get another rotation than on a side that keeps the buffer in "
        "float32. An ALiBi bias of -1023 rounds to -1024 in bfloat16 (spacing 4 between 512 and 1024): distant "
        "positions get the same bias. huggingface/transformers#29285 moved the rotary computation to float32, and "
        "NVIDIA-NeMo/Automodel#2549 measured the cast inv_freq as a KL divergence of 1.1e-2 against a float32 "
        "reference (5e-3 allowed).",
        fix="Keep the frequencies out of the cast: a plain attribute instead of a buffer (moved with `.to(x.device)` "
        "in forward), recomputed in float32 from the config where the angles are built, or put back in float32 "
        "after `model.to(...)`; or compute in bf16 under autocast and keep the model in float32.",
        references=("docs/knowledge/mixed-precision.md#dtypes-that-drift-with-the-model",
                    "huggingface/transformers#29285 (rotary inv_freq and positions kept in float32)",
                    "NVIDIA-NeMo/Automodel#2549 (inv_freq rounded by the model cast; a later .float() cannot "
                    "recover it)",
                    "NVIDIA/Megatron-LM#744 (RotaryEmbedding's inv_freq follows model.to(torch.bfloat16))",
                    "PyTorch nn.Module.to: floating-point parameters and buffers are cast, "
                    "docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.to"),
    )
    invalid = (
        Example.script("""
            import torch
            from torch import nn


            class Rotary(nn.Module):
                def __init__(self, dim, base=10000.0):
                    super().__init__()
                    inv_freq = 1.0 / base ** (torch.arange(0, dim, 2).float() / dim)
                    self.register_buffer("inv_freq", inv_freq, persistent=False)  # expect: ACL622

                def forward(self, x):
                    t = torch.arange(x.shape[1], device=x.device, dtype=torch.float32)
                    angles = torch.outer(t, self.inv_freq).to(x.dtype)
                    return x * angles.cos().repeat(1, 2)


            if __name__ == "__main__":
                model = nn.Sequential(nn.Linear(16, 16), Rotary(16)).to(torch.bfloat16)
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
                model(torch.randn(2, 2048, 16, dtype=torch.bfloat16)).float().pow(2).mean().backward()
                optimizer.step()
        """, "rotary frequencies cast to bfloat16 with the model"),
        Example.script("""
            import torch
            from torch import nn


            class AlibiAttention(nn.Module):
                def __init__(self, heads, length):
                    super().__init__()
                    slopes = torch.tensor([2.0 ** (-8 * (h + 1) / heads) for h in range(heads)])
                    self.register_buffer("bias", -slopes[:, None] * torch.arange(length)[None, :])  # expect: ACL622

                def forward(self, scores):
                    return torch.softmax(scores + self.bias[:, None, :], dim=-1)


            if __name__ == "__main__":
                model = nn.Sequential(nn.Linear(1024, 1024), AlibiAttention(8, 1024)).half()
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.randn(8, 1024, 1024).half()).float().mean().backward()
                optimizer.step()
        """, "an ALiBi bias cast to float16 with the model"),
    )
    valid = (
        Example.script("""
            import torch
            from torch import nn


            class Rotary(nn.Module):
                def __init__(self, dim, base=10000.0):
                    super().__init__()
                    self.inv_freq = 1.0 / base ** (torch.arange(0, dim, 2).float() / dim)

                def forward(self, x):
                    t = torch.arange(x.shape[1], device=x.device, dtype=torch.float32)
                    angles = torch.outer(t, self.inv_freq.to(x.device)).to(x.dtype)
                    return x * angles.cos().repeat(1, 2)


            if __name__ == "__main__":
                model = nn.Sequential(nn.Linear(16, 16), Rotary(16)).to(torch.bfloat16)
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
                model(torch.randn(2, 2048, 16, dtype=torch.bfloat16)).float().pow(2).mean().backward()
                optimizer.step()
        """, "a plain attribute, not a buffer: the model's cast leaves it in float32"),
        Example.script("""
            import torch
            from torch import nn


            class Embeddings(nn.Module):
                def __init__(self, length, dim):
                    super().__init__()
                    self.table = nn.Embedding(length, dim)
                    self.register_buffer("position_ids", torch.arange(length).expand((1, -1)))

                def forward(self, x):
                    return x + self.table(self.position_ids[:, : x.shape[1]])


            if __name__ == "__main__":
                model = Embeddings(4096, 16).to(torch.bfloat16)
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
                model(torch.randn(2, 4096, 16, dtype=torch.bfloat16)).float().mean().backward()
                optimizer.step()
        """, "integer position ids: the cast leaves integer buffers alone"),
        Example.script("""
            import torch
            from torch import nn


            class Rotary(nn.Module):
                def __init__(self, dim, base=10000.0):
                    super().__init__()
                    self.register_buffer("inv_freq", 1.0 / base ** (torch.arange(0, dim, 2).float() / dim))

                def forward(self, x):
                    t = torch.arange(x.shape[1], device=x.device, dtype=torch.float32)
                    return x * torch.outer(t, self.inv_freq).cos().repeat(1, 2)


            if __name__ == "__main__":
                model = nn.Sequential(nn.Linear(16, 16), Rotary(16))
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    loss = model(torch.randn(2, 2048, 16)).float().pow(2).mean()
                loss.backward()
                optimizer.step()
        """, "autocast: the module, and its buffers, stay float32"),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        files = ctx.program.files
        casts = [cast for file in files for cast in model_casts(file) if cast.method in _BUFFER_CASTS]
        if not casts:
            return
        cast = min(casts, key=lambda c: mantissa_bits(c.dtype))
        for file in files:
            for call, name in _position_buffers(file):
                owner = module_class_of(ctx, file, call.scope)
                if owner is None or _assigned_again(files, name, call.scope):
                    continue
                ctx.report(self, file, call.node, _message(name, cast),
                           fix=f"keep `{name}` a float32 attribute (not a buffer), or recompute it in float32 where "
                               "it is used",
                           premises=(Premise("value", True, f"{cast.evidence}, which casts the floating buffers of "
                                             f"its modules; `{name}` at {where(file, call.node)} is a float tensor "
                                             f"built from torch.arange in `{owner}`, and nothing assigns "
                                             f"`{name}` again"),),
                           rests_on=("trains", "executes", "value"))


def _message(name: str, cast: ModelCast) -> str:
    bits = mantissa_bits(cast.dtype) + 1
    return (f"the buffer `{name}` is built from positions in float32, and {cast.evidence}, which casts floating "
            f"buffers too: {cast.dtype} keeps {bits} significant bits, so each value is off by up to 2**-{bits} of "
            f"itself and integers above 2**{bits} = {2 ** bits} are not exact; an angle position * inv_freq at "
            f"position 2048 is off by up to 2048 * 2**-{bits} = {2048 / 2 ** bits:g} rad for inv_freq = 1, and a "
            "bias of the distance rounds neighbouring distances together, where a side keeping the buffer in float32 "
            "does not.")


def _assigned_again(files, name: str, scope: str) -> bool:
    """The buffer is assigned outside the function that registers it (`self.inv_freq = ...` recomputed,
    `rotary.inv_freq = saved` put back after the cast, `.inv_freq.data = ...`): what it holds then is not
    known to be the cast value."""
    suffixes = (f".{name}", f".{name}.data")
    return any(assignment.scope != scope and assignment.target.endswith(suffixes)
               for facts in files for assignment in facts.assignments)


def _position_buffers(facts: FileFacts) -> Iterator[tuple]:
    """(register_buffer call, buffer name) for floating buffers built from torch.arange."""
    for call in calls_with_method(facts, ("register_buffer",)):
        target = receiver(call)
        name = call.arg("name", 0)
        tensor = call.arg("tensor", 1)
        if target is None or target.dotted != "self" or name is None or tensor is None:
            continue
        if not isinstance(name.value.literal, str):
            continue
        value = value_of(facts, tensor.value, call)
        if _from_positions(value) and not _integer(value):
            yield call, name.value.literal


def _from_positions(value: Value, depth: int = 0) -> bool:
    """`value` is computed from a `torch.arange`."""
    if depth > 6:
        return False
    if value.base_names & mp_names("aranges"):
        return True
    inner = [*value.operands, *(a.value for a in value.base_args)]
    return any(_from_positions(v, depth + 1) for v in inner)


def _integer(value: Value, depth: int = 0) -> Optional[bool]:
    """An integer tensor: a bare `torch.arange` of integers through shape-keeping methods, or products and sums
    of such and integer literals. Anything divided, raised, made float, or mixed with other tensors is not."""
    if depth > 6:
        return False
    keeping = frozenset(mp_table()["dtype_keeping"])
    if value.base_names & mp_names("aranges"):
        dtype = next((a for a in value.base_args if a.keyword == "dtype"), None)
        floats = any(isinstance(a.value.literal, float) for a in value.base_args)
        return dtype is None and not floats and all(m in keeping for m in value.chain)
    if value.op in ("*", "+", "-") and value.operands:
        return all(_integer(v, depth + 1) or isinstance(v.literal, int) for v in value.operands)
    return False


RULES = [PositionBuffersCastWithModel()]
