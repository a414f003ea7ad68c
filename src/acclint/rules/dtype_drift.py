"""Category `mixed-precision`: values whose dtype drifts with the model's. Once a program casts its model to
bfloat16 or float16 (`model.half()`, `.to(torch.bfloat16)`, `from_pretrained(torch_dtype=...)`), whatever the
code builds "in the model's dtype" (positions from `x.dtype`) or copies from the model (an EMA shadow) lives in
that dtype too, with its few mantissa bits: the rounding arithmetic is in the messages
(docs/knowledge/mixed-precision.md#dtypes-that-drift-with-the-model)."""

from __future__ import annotations

from typing import Iterator, Optional

from acclint.findings import Premise
from acclint.linter.context import ProgramContext
from acclint.linter.facts import MODULE_SCOPE, Call, FileFacts, Value
from acclint.linter.rulebase import Example, RuleDoc
from acclint.rules.base import ProgramRule
from acclint.rules.flow import assigned_before, calls_named, calls_with_method, receiver, short, value_of
from acclint.rules.mixed_precision import mp_names, mp_table
from acclint.rules.model_cast import (ModelCast, cast_to_fp32_later, mantissa_bits, module_class_of, program_cast,
                                      where)
from acclint.rules.program_facts import ProgramFacts


class PositionsInModelDtype(ProgramRule):
    code = "ACL617"
    name = "positions-in-model-dtype"
    category = "mixed-precision"
    severity = "warning"
    # Stable by declaration: where the model cast and the dtype are proven, the rounding is arithmetic, not a
    # judgement; the tuning corpus holds no proven finding of it to measure.
    maturity = "stable"
    tensor_framework = "torch"
    summary = "Position indices built in another tensor's dtype in a program whose model is cast to bf16/fp16"
    doc = RuleDoc(
        what="Reports `torch.arange(..., dtype=x.dtype)` and `torch.arange(...).to(x.dtype)` / `.type_as(x)` (positions "
        "built in the dtype of another tensor) in a training program that casts its model to bfloat16 or float16 "
        "(`model.to(torch.bfloat16)`, `.half()`, `.bfloat16()`, `from_pretrained(torch_dtype=...)`). An arange "
        "whose length is a literal the dtype holds exactly (256 in bfloat16, 2048 in float16) is left alone.",
        why="bfloat16 keeps 8 significant bits (7 stored), so integers above 2**8 = 256 are not exact: between 256 and "
        "512 they are rounded to even numbers, between 1024 and 2048 to multiples of 8 (2047 becomes 2048). "
        "float16 keeps 11 (exact to 2048). Positions past that collide, and the rotary angles position * "
        "inv_freq (or the embeddings) built from them are wrong by up to half a spacing: a model trained on one side "
        "with float32 positions (most fused rotary kernels, reference implementations) and on the other with "
        "bfloat16 ones diverges at long sequence lengths (huggingface/transformers#29285).",
        fix="Build positions and angles in float32 and cast the result: `torch.arange(n, device=x.device, "
        "dtype=torch.float32)`, `torch.outer(pos, inv_freq.float())`, then `.cos().to(x.dtype)`.",
        references=("docs/knowledge/mixed-precision.md#dtypes-that-drift-with-the-model",
                    "huggingface/transformers#29285 (rotary positions computed in bfloat16 lose precision past 256)",
                    "EleutherAI/gpt-neox#1003 (`arange(seqlen).type_as(inv_freq)` in half precision: cos off by 0.78)"),
    )
    invalid = (
        Example.script("""
            import torch
            from torch import nn


            class Rotary(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, dim, 2).float() / dim))

                def forward(self, x):
                    pos = torch.arange(x.shape[1], device=x.device, dtype=x.dtype)  # expect: ACL617
                    angles = torch.outer(pos, self.inv_freq.to(x.dtype))
                    return x * angles.cos().repeat(1, 2)


            if __name__ == "__main__":
                model = nn.Sequential(nn.Linear(16, 16), Rotary(16)).to(torch.bfloat16)
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
                model(torch.randn(2, 1024, 16, dtype=torch.bfloat16)).float().pow(2).mean().backward()
                optimizer.step()
        """, "positions in the dtype of the activations, the model cast to bfloat16"),
        Example.script("""
            import torch
            from torch import nn


            class Embed(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.scale = nn.Parameter(torch.ones(1))

                def forward(self, x):
                    pos = torch.arange(4096, device=x.device).type_as(x)  # expect: ACL617
                    return x + self.scale * pos[None, :, None]


            if __name__ == "__main__":
                model = Embed().half()
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.randn(1, 4096, 8).half()).float().mean().backward()
                optimizer.step()
        """, "4096 positions in float16: exact only to 2048"),
    )
    valid = (
        Example.script("""
            import torch
            from torch import nn


            class Rotary(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, dim, 2).float() / dim))

                def forward(self, x):
                    pos = torch.arange(x.shape[1], device=x.device, dtype=torch.float32)
                    angles = torch.outer(pos, self.inv_freq.float())
                    return x * angles.cos().repeat(1, 2).to(x.dtype)


            if __name__ == "__main__":
                model = nn.Sequential(nn.Linear(16, 16), Rotary(16)).to(torch.bfloat16)
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
                model(torch.randn(2, 1024, 16, dtype=torch.bfloat16)).float().pow(2).mean().backward()
                optimizer.step()
        """, "positions and angles in float32, cast at the end"),
        Example.script("""
            import torch
            from torch import nn


            class Rotary(nn.Module):
                def forward(self, x):
                    pos = torch.arange(x.shape[1], device=x.device, dtype=x.dtype)
                    return x * pos[None, :, None].cos()


            if __name__ == "__main__":
                model = nn.Sequential(nn.Linear(16, 16), Rotary())
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
                model(torch.randn(2, 1024, 16)).pow(2).mean().backward()
                optimizer.step()
        """, "a model kept in float32: the positions are float32 too"),
        Example.script("""
            import torch
            from torch import nn


            class Bias(nn.Module):
                def forward(self, x):
                    return x + torch.arange(128, device=x.device, dtype=x.dtype)


            if __name__ == "__main__":
                model = nn.Sequential(nn.Linear(128, 128), Bias()).to(torch.bfloat16)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.randn(2, 128, dtype=torch.bfloat16)).float().mean().backward()
                optimizer.step()
        """, "128 positions: bfloat16 holds every integer up to 256"),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        files = ctx.program.files
        cast = program_cast(files)
        if cast is None:
            return
        exact = 2 ** (mantissa_bits(cast.dtype) + 1)
        for file in files:
            for call, how, length in _positions(file):
                owner = module_class_of(ctx, file, call.scope)
                if owner is None:
                    continue  # outside a model's methods (a data collator): the tensor need not be the model's
                literal = length.literal if length is not None else None
                known = isinstance(literal, int) and not isinstance(literal, bool)
                if known and literal <= exact:
                    continue  # every position is exact in this dtype
                material = (Premise("material", True, f"{literal} positions: {cast.dtype} is exact only to {exact}")
                            if known else Premise("material", False, f"the length `{short(length) if length else '?'}`"
                                                  f" is not known here; positions above {exact} are rounded"))
                ctx.report(self, file, call.node, _positions_message(how, cast, exact),
                           fix="torch.arange(n, device=x.device, dtype=torch.float32), cast the result to x.dtype",
                           premises=(Premise("value", True, f"{cast.evidence}; {how} at {where(file, call.node)} "
                                             f"takes the dtype of a tensor in `{call.scope}`, a method of the "
                                             f"module class `{owner}`"), material),
                           rests_on=("trains", "executes", "value", "material"))


def _positions_message(how: str, cast: ModelCast, exact: int) -> str:
    bits = mantissa_bits(cast.dtype) + 1
    return (f"{how} builds positions in the model's dtype, and {cast.evidence}: {cast.dtype} keeps {bits} significant "
            f"bits, so integers above 2**{bits} = {exact} are not exact ({exact + 1} "
            f"becomes {exact}, and between {2 * exact} and {4 * exact} the spacing is 4); neighbouring positions "
            "collide and the angles or embeddings built from them differ from float32 positions.")


def _dtype_of_other(facts: FileFacts, value: Value, call: Call) -> bool:
    """`x.dtype` (or a name holding it): the dtype of another tensor, not a dtype the code names."""
    held = value_of(facts, value, call)
    return any((v.dotted or "").endswith(".dtype") for v in (value, held))


def _positions(facts: FileFacts) -> Iterator[tuple]:
    """(call, how it is written, the length argument) for aranges built in another tensor's dtype."""
    aranges = mp_names("aranges")
    for call in calls_named(facts, aranges):
        dtype = call.arg("dtype")
        if dtype is not None and _dtype_of_other(facts, dtype.value, call):
            yield call, f"`torch.arange(..., dtype={short(dtype.value)})`", _length(call.args)
    for call in calls_with_method(facts, ("to", "type_as")):
        target = receiver(call)
        if call.names or target is None or not (target.base_call and target.base_names & aranges) or target.chain:
            continue
        arg = call.arg("dtype", 0)
        if arg is None or (call.method == "to" and not _dtype_of_other(facts, arg.value, call)):
            continue
        yield call, f"`torch.arange(...).{call.method}({short(arg.value)})`", _length(target.base_args)


def _length(args: tuple) -> Optional[Value]:
    """The end of `arange(end)` / `arange(start, end)`."""
    positional = [a.value for a in args if a.keyword is None and not a.star]
    keyword = next((a.value for a in args if a.keyword == "end"), None)
    return keyword or (positional[1] if len(positional) > 1 else positional[0] if positional else None)


_COPIES = frozenset({"copy.deepcopy"})
_IN_PLACE_UPDATES = ("add_", "lerp_", "copy_")


class EmaShadowInHalfPrecision(ProgramRule):
    code = "ACL618"
    name = "ema-shadow-in-half-precision"
    category = "mixed-precision"
    severity = "warning"
    # Stable by declaration: where the model cast and the dtype are proven, the rounding is arithmetic, not a
    # judgement; the tuning corpus holds no proven finding of it to measure.
    maturity = "stable"
    tensor_framework = "torch"
    summary = "An EMA shadow of a bf16/fp16 model kept in that dtype, where (1 - decay) * p is below its resolution"
    doc = RuleDoc(
        what="Reports the in-place update of an exponential moving average (`ema.mul_(d).add_(p, alpha=1 - d)`, "
        "`ema.lerp_(p, 1 - d)`, `ema.copy_(d * ema + (1 - d) * p)`) in a file whose shadow is a `copy.deepcopy` of "
        "the model with no float32 cast, in a training program that casts its model to bfloat16 or float16. The "
        "decay is followed to its literal (a default argument stored on `self`) to do the arithmetic. The copy and "
        "the update must belong to one class (or one function): an optimizer's own moments are not a shadow.",
        why="A change smaller than half the spacing between neighbouring values is rounded away. float16 keeps 10 "
        "mantissa bits, so that half-spacing is at least 2**-12 ≈ 2.4e-4 of the value; bfloat16 keeps 7, at least "
        "2**-9 ≈ 2.0e-3. With decay 0.9999, 1 - decay = 1e-4 is below both: `ema * decay` rounds back to `ema`, and "
        "the increment (1 - decay) * p of a weight near the average is lost, so the shadow stays at the weights it "
        "copied (huggingface/pytorch-image-models#1831). A float32 shadow (23 bits, 6e-8) follows the weights.",
        fix="Keep the shadow in float32: `copy.deepcopy(model).float()`, and update it with `p.detach().float()`.",
        references=("docs/knowledge/mixed-precision.md#dtypes-that-drift-with-the-model",
                    "huggingface/pytorch-image-models#1831 (an EMA kept in half precision does not move)"),
    )
    invalid = (
        Example.script("""
            import copy

            import torch
            from torch import nn


            class EMA:
                def __init__(self, model, decay=0.9999):
                    self.shadow = copy.deepcopy(model).eval()
                    self.decay = decay

                @torch.no_grad()
                def update(self, model):
                    for ema_p, p in zip(self.shadow.parameters(), model.parameters()):
                        ema_p.mul_(self.decay).add_(p.detach(), alpha=1 - self.decay)  # expect: ACL618


            if __name__ == "__main__":
                model = nn.Linear(8, 8).half()
                ema = EMA(model)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.randn(4, 8).half()).float().mean().backward()
                optimizer.step()
                ema.update(model)
        """, "a float16 shadow: 1 - 0.9999 is below float16's resolution"),
        Example.script("""
            from copy import deepcopy

            import torch
            from torch import nn


            class ModelEma:
                def __init__(self, model, decay=0.999):
                    self.module = deepcopy(model)
                    self.decay = decay

                @torch.no_grad()
                def update(self, model):
                    for e, m in zip(self.module.state_dict().values(), model.state_dict().values()):
                        e.lerp_(m, 1.0 - self.decay)  # expect: ACL618


            if __name__ == "__main__":
                model = nn.Linear(8, 8).to(torch.bfloat16)
                ema = ModelEma(model)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.randn(4, 8, dtype=torch.bfloat16)).float().mean().backward()
                optimizer.step()
                ema.update(model)
        """, "a bfloat16 shadow updated with lerp_: 1 - 0.999 is below bfloat16's resolution"),
    )
    valid = (
        Example.script("""
            import copy

            import torch
            from torch import nn


            class EMA:
                def __init__(self, model, decay=0.9999):
                    self.shadow = copy.deepcopy(model).eval().float()
                    self.decay = decay

                @torch.no_grad()
                def update(self, model):
                    for ema_p, p in zip(self.shadow.parameters(), model.parameters()):
                        ema_p.mul_(self.decay).add_(p.detach().float(), alpha=1 - self.decay)


            if __name__ == "__main__":
                model = nn.Linear(8, 8).half()
                ema = EMA(model)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.randn(4, 8).half()).float().mean().backward()
                optimizer.step()
                ema.update(model)
        """, "the shadow kept in float32"),
        Example.script("""
            import copy

            import torch
            from torch import nn


            class EMA:
                def __init__(self, model, decay=0.9999):
                    self.shadow = copy.deepcopy(model)
                    self.decay = decay

                @torch.no_grad()
                def update(self, model):
                    for ema_p, p in zip(self.shadow.parameters(), model.parameters()):
                        ema_p.mul_(self.decay).add_(p.detach(), alpha=1 - self.decay)


            if __name__ == "__main__":
                model = nn.Linear(8, 8)
                ema = EMA(model)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    loss = model(torch.randn(4, 8)).float().mean()
                loss.backward()
                optimizer.step()
                ema.update(model)
        """, "autocast keeps the weights, and so the shadow, in float32"),
        Example.script("""
            import copy

            import torch
            from torch import nn


            class EMA:
                def __init__(self, model, decay=0.99):
                    self.shadow = copy.deepcopy(model)
                    self.decay = decay

                @torch.no_grad()
                def update(self, model):
                    for ema_p, p in zip(self.shadow.parameters(), model.parameters()):
                        ema_p.mul_(self.decay).add_(p.detach(), alpha=1 - self.decay)


            if __name__ == "__main__":
                model = nn.Linear(8, 8).half()
                ema = EMA(model)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.randn(4, 8).half()).float().mean().backward()
                optimizer.step()
                ema.update(model)
        """, "decay 0.99: 1 - decay = 0.01 is far above float16's resolution"),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        files = ctx.program.files
        cast = program_cast(files)
        if cast is None:
            return
        bits = mantissa_bits(cast.dtype)
        lost_below = 2.0 ** -(bits + 2)  # half the smallest relative spacing
        for file in files:
            shadows = _half_shadows(file, files)
            for call, weight in _ema_updates(file):
                shadow = shadows.get(_home(file, call.scope))
                if shadow is None:
                    continue  # no half-precision copy of the model kept by this class (or function)
                step = _number(file, weight, call.scope)
                if step is not None and step >= lost_below:
                    continue  # the increment survives, rounded: not the failure this rule states
                material = (Premise("material", True, f"1 - decay = {step:g} < 2**-{bits + 2} = {lost_below:.2g}")
                            if step is not None else
                            Premise("material", False, f"the decay of `{short(weight)}` is not known here"))
                ctx.report(self, file, call.node, _ema_message(cast, bits, step, lost_below),
                           fix="copy.deepcopy(model).float(), and update it with p.detach().float()",
                           premises=(Premise("value", True, f"{cast.evidence}; the shadow is `{shadow}` with no float32 "
                                             "cast"), material),
                           rests_on=("trains", "executes", "value", "material"))


def _ema_message(cast: ModelCast, bits: int, step: Optional[float], lost_below: float) -> str:
    increment = f"1 - decay = {step:g} is" if step is not None else "if 1 - decay is"
    return (f"this moving average updates a shadow copy of the model, and {cast.evidence} with no float32 cast of the "
            f"copy: {cast.dtype} keeps {bits} mantissa bits, so a change below 2**-{bits + 2} ≈ {lost_below:.2g} of a "
            f"value is rounded away; {increment} below it: `ema * decay` rounds back to `ema` and (1 - decay) * p is "
            "lost, so the average stays at the weights it copied.")


def _home(facts: FileFacts, scope: str) -> str:
    """The class a method belongs to, else the function itself: where a shadow and its update meet."""
    function = facts.functions.get(scope)
    return function.owner if function is not None and function.owner else scope


def _half_shadows(facts: FileFacts, files) -> dict:
    """class (or function) -> how its `target = copy.deepcopy(...)` is written, for copies kept in the model's
    dtype (no `.float()` / `.to(torch.float32)` on the copy, then, or later anywhere in the program:
    `ema.shadow.float()` for `self.shadow`)."""
    fp32 = set(mp_table()["fp32_cast_methods"])
    found: dict = {}
    for assignment in facts.assignments:
        value = assignment.value
        if not (value.base_call and value.base_names & _COPIES):
            continue
        if any(m in fp32 for m in value.chain) or _to_fp32(value) or cast_to_fp32_later(files, assignment.target):
            continue
        found.setdefault(_home(facts, assignment.scope),
                         f"{assignment.target} = {short(value)}` at `{where(facts, assignment.node)}")
    return found


def _to_fp32(value: Value) -> bool:
    fp32 = frozenset(mp_table()["fp32_dtypes"])
    return any(method == "to" and any(a.value.names & fp32 for a in args)
               for method, args in zip(value.chain, value.chain_args))


def _ema_updates(facts: FileFacts) -> Iterator[tuple]:
    """(call, the `1 - decay` it weighs the new value with) for each in-place moving-average update."""
    for call in calls_with_method(facts, _IN_PLACE_UPDATES):
        for arg in call.args:
            decay = _one_minus(arg.value)
            if decay is not None:
                yield call, decay
                break


def _one_minus(value: Value, depth: int = 0) -> Optional[Value]:
    """The `1 - decay` inside `value` (as an operand of products and sums), if any."""
    if depth > 4 or value.op is None:
        return None
    if value.op == "-" and len(value.operands) == 2 and value.operands[0].literal in (1, 1.0):
        return value
    for operand in value.operands:
        found = _one_minus(operand, depth + 1)
        if found is not None:
            return found
    return None


def _number(facts: FileFacts, weight: Value, scope: str) -> Optional[float]:
    """1 - decay as a number, when the decay is a literal, a name or `self.` attribute that holds one, or a
    parameter's default."""
    decay = _literal(facts, weight.operands[1], scope, 0)
    return 1.0 - decay if decay is not None else None


def _literal(facts: FileFacts, value: Value, scope: str, depth: int) -> Optional[float]:
    literal = value.literal
    if isinstance(literal, (int, float)) and not isinstance(literal, bool):
        return float(literal)
    name = value.dotted
    if not name or depth > 4:
        return None
    if name.startswith("self.") and "." in scope:
        owner = scope.rsplit(".", 1)[0] + "."
        for assignment in facts.assignments:
            if assignment.target == name and assignment.scope.startswith(owner):
                return _literal(facts, assignment.value, assignment.scope, depth + 1)
        return None
    held = assigned_before(facts, name, scope, float("inf"))
    if held is not None:
        return _literal(facts, held[1], scope, depth + 1)
    function = facts.functions.get(scope)
    if function is not None and name in function.defaults:
        return _literal(facts, function.defaults[name], MODULE_SCOPE, depth + 1)
    return None


RULES = [PositionsInModelDtype(), EmaShadowInHalfPrecision()]
