"""Category `mixed-precision`: master weights kept in half precision. A program that casts its model to
bfloat16/float16 and hands the model's own parameters to a torch optimizer adds every update to a half-precision
value; mixed-precision recipes (apex O2, DeepSpeed, Megatron/MindSpeed) step float32 master copies instead.
Which calls keep masters is data: `[master_weights]` in knowledge/mixed_precision.toml."""

from __future__ import annotations

from typing import Iterator, Optional

from acclint.findings import Premise
from acclint.linter.context import ProgramContext
from acclint.linter.facts import Call, FileFacts, Value
from acclint.linter.rulebase import Example, RuleDoc
from acclint.rules.base import ProgramRule
from acclint.rules.flow import calls_named, short, value_of
from acclint.rules.mixed_precision import mp_table
from acclint.rules.model_cast import ModelCast, casts_name_of, mantissa_bits, model_casts, where
from acclint.rules.program_facts import ProgramFacts

_PARAMETER_METHODS = ("parameters", "named_parameters")


def _table() -> dict:
    return mp_table()["master_weights"]


class MasterWeightsInHalfPrecision(ProgramRule):
    code = "ACL619"
    name = "master-weights-in-half-precision"
    category = "mixed-precision"
    severity = "warning"
    # Stable by declaration: where the cast of the stepped model is proven, the lost updates are arithmetic (7
    # mantissa bits); the tuning corpus holds too few decided proven findings of it to measure (benchmarks/precision/).
    maturity = "stable"
    tensor_framework = "torch"
    summary = "A torch optimizer stepping a bf16/fp16 model's own parameters: no float32 master weights"
    doc = RuleDoc(
        what="Reports a `torch.optim` optimizer built over `model.parameters()` (directly, through a name, or "
        "through `filter(...)`) in a training program that casts its model to bfloat16 or float16 "
        "(`model.half()`, `.to(torch.bfloat16)`, `from_pretrained(torch_dtype=...)`), when nothing in the program "
        "keeps float32 master weights: no `apex.amp.initialize`, `deepspeed.initialize`, Megatron/MindSpeed "
        "optimizer builder or `pretrain`, no PEFT adapters (created in float32), and no optimizer keyword that "
        "keeps masters (`FusedAdam(master_weights=True)`, torchao's `bf16_stochastic_round=True`). Autocast "
        "leaves the weights in float32 and is not reported.",
        why="An update lr * u is added to a weight p in p's dtype. bfloat16 keeps 7 mantissa bits, so the spacing "
        "of values near p is 2**-7 to 2**-8 of |p| and any update below half of it, 2**-9 ≈ 0.2% of |p|, rounds "
        "back to p: an Adam step (|u| ≈ 1) of lr = 1e-4 leaves every weight above 2**9 * 1e-4 = 0.051 unchanged. "
        "float16 (10 bits) loses updates below 2**-12 ≈ 0.024% of |p| (weights above 0.41 at lr = 1e-4). "
        "Mixed-precision training keeps float32 masters for this reason (Micikevicius et al. 2018: updates 2048x "
        "smaller than the weight vanish in float16). One side training pure bf16 and the other with float32 "
        "masters (Megatron's and DeepSpeed's bf16 optimizers, apex O2, autocast) diverge from the first steps: "
        "workofart/ml-by-hand#85 measured 0 of 768 weights moved after 100 bf16 AdamW steps at lr 6e-4, 603 with "
        "float32 masters.",
        fix="Keep the model in float32 and compute in bf16/fp16 under `torch.autocast`, or keep float32 masters: "
        "an optimizer over float32 copies that are copied back after each step, `apex.optimizers.FusedAdam("
        "master_weights=True)`, or the framework's bf16 optimizer (DeepSpeed `bf16.enabled`, Megatron `--bf16`).",
        references=("docs/knowledge/mixed-precision.md#master-weights",
                    "Micikevicius et al., Mixed Precision Training, arXiv:1710.03740, section 3.1",
                    "workofart/ml-by-hand#85 (bf16 weights without fp32 masters: 0 of 768 weights moved)",
                    "NVIDIA-NeMo/Automodel#3444 (bf16 AdamW at lr 6e-6: steps round back to the same bf16 value)"),
    )
    invalid = (
        Example.script("""
            import torch
            from torch import nn


            if __name__ == "__main__":
                model = nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 1)).to(torch.bfloat16)
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)  # expect: ACL619
                for step in range(10):
                    loss = model(torch.randn(8, 64, dtype=torch.bfloat16)).float().pow(2).mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        """, "a bfloat16 model stepped by AdamW: updates below 0.2% of a weight are rounded away"),
        Example.script("""
            import torch
            from torch import nn


            def main():
                model = nn.Linear(16, 16)
                model.half()
                trainable = filter(lambda p: p.requires_grad, model.parameters())
                optimizer = torch.optim.SGD(trainable, lr=0.01, momentum=0.9)  # expect: ACL619
                loss = model(torch.randn(4, 16).half()).float().mean()
                loss.backward()
                optimizer.step()


            if __name__ == "__main__":
                main()
        """, "model.half() and the parameters passed through filter()"),
    )
    valid = (
        Example.script("""
            import torch
            from torch import nn


            if __name__ == "__main__":
                model = nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 1))
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
                for step in range(10):
                    with torch.autocast("cpu", dtype=torch.bfloat16):
                        loss = model(torch.randn(8, 64)).float().pow(2).mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        """, "autocast computes in bfloat16 and keeps the weights in float32"),
        Example.script("""
            import torch
            from apex import amp
            from torch import nn


            if __name__ == "__main__":
                model = nn.Linear(64, 1).cuda().half()
                optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
                model, optimizer = amp.initialize(model, optimizer, opt_level="O2")
                loss = model(torch.randn(8, 64).cuda().half()).float().mean()
                with amp.scale_loss(loss, optimizer) as scaled:
                    scaled.backward()
                optimizer.step()
        """, "apex O2 steps float32 master copies of the half model"),
        Example.script("""
            import deepspeed
            import torch
            from torch import nn


            if __name__ == "__main__":
                model = nn.Linear(64, 1).to(torch.bfloat16)
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
                engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer,
                                                               config={"bf16": {"enabled": True}})
                loss = engine(torch.randn(8, 64, dtype=torch.bfloat16)).float().mean()
                engine.backward(loss)
                engine.step()
        """, "DeepSpeed's bf16 optimizer keeps float32 master partitions"),
        Example.script("""
            import torch
            from apex.optimizers import FusedAdam
            from torch import nn


            if __name__ == "__main__":
                model = nn.Linear(64, 1).cuda().half()
                optimizer = FusedAdam(model.parameters(), lr=1e-4, master_weights=True)
                loss = model(torch.randn(8, 64).cuda().half()).float().mean()
                loss.backward()
                optimizer.step()
        """, "an optimizer that keeps float32 masters itself"),
        Example.script("""
            import torch
            from peft import LoraConfig, get_peft_model
            from transformers import AutoConfig, AutoModelForCausalLM


            if __name__ == "__main__":
                config = AutoConfig.for_model("gpt2", n_layer=2, n_embd=64, n_head=2)
                model = AutoModelForCausalLM.from_config(config).to(torch.bfloat16)
                model = get_peft_model(model, LoraConfig(r=8, target_modules=["c_attn"]))
                optimizer = torch.optim.AdamW(model.parameters(), lr=2e-4)
                loss = model(input_ids=torch.randint(0, 100, (2, 16)), labels=torch.randint(0, 100, (2, 16))).loss
                loss.backward()
                optimizer.step()
        """, "LoRA adapters created in float32 over a frozen bfloat16 model"),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        files = ctx.program.files
        casts = [cast for file in files for cast in model_casts(file)]
        if not casts or _masters_kept(files):
            return
        for file in files:
            for call, params in _optimizers_over_parameters(file):
                cast, proven = _cast_of(casts, params, file, call.scope)
                bits = mantissa_bits(cast.dtype)
                lr = _lr(file, call)
                ctx.report(self, file, call.node, _message(call, cast, bits, lr),
                           fix="keep the model in float32 under torch.autocast, or float32 master weights",
                           premises=(Premise("value", proven, f"{cast.evidence}; `{call.callee}` at "
                                             f"{where(file, call.node)} steps `{short(params)}`"
                                             + ("" if proven else ", which may not be the cast model")),),
                           rests_on=("trains", "executes", "value"))


def _masters_kept(files) -> bool:
    """Something in the program keeps float32 master weights: a keeper call, or an optimizer whose keyword
    turns masters on."""
    keepers = frozenset(_table()["keepers"])
    by_keyword = _table()["keyword_keepers"]
    for facts in files:
        if calls_named(facts, keepers):
            return True
        for call in calls_named(facts, frozenset(by_keyword)):
            for name in call.names & frozenset(by_keyword):
                arg = call.arg(by_keyword[name])
                if arg is not None and value_of(facts, arg.value, call).literal is not False:
                    return True
    return False


def _optimizers_over_parameters(facts: FileFacts) -> Iterator[tuple]:
    """(optimizer call, the `X.parameters()` value it steps) for torch optimizers over a module's parameters."""
    for call in calls_named(facts, frozenset(_table()["optimizers"])):
        arg = call.arg("params", 0)
        params = _parameters(facts, arg.value, call, 0) if arg is not None else None
        if params is not None:
            yield call, params


def _parameters(facts: FileFacts, value: Value, call: Call, depth: int) -> Optional[Value]:
    """The `X.parameters()` inside `value`: itself, a name holding it, or an argument of `filter(...)`/`list(...)`."""
    if depth > 3:
        return None
    if value.chain and value.chain[-1] in _PARAMETER_METHODS:
        return value
    if value.base_call and not value.chain:
        for arg in value.base_args:
            found = _parameters(facts, arg.value, call, depth + 1)
            if found is not None:
                return found
        return None
    held = value_of(facts, value, call)
    return _parameters(facts, held, call, depth + 1) if held is not value else None


def _cast_of(casts: list, params: Value, facts: FileFacts, scope: str) -> tuple:
    """(the cast of the model whose parameters are stepped, proven) or the program's lowest cast, unproven."""
    owner = params.base if not params.base_call else None
    matching = [cast for cast in casts if owner and casts_name_of(cast, owner, facts, scope)]
    pool = matching or casts
    lowest = min(pool, key=lambda cast: mantissa_bits(cast.dtype))
    return lowest, bool(matching)


def _lr(facts: FileFacts, call: Call) -> Optional[float]:
    arg = call.arg("lr", 1)
    literal = value_of(facts, arg.value, call).literal if arg is not None else None
    return float(literal) if isinstance(literal, (int, float)) and not isinstance(literal, bool) else None


def _message(call: Call, cast: ModelCast, bits: int, lr: Optional[float]) -> str:
    lost = 2.0 ** -(bits + 2)
    at = (f"with lr = {lr:g}, a step of |u| ≈ 1 (Adam-type) leaves every weight above 2**{bits + 2} * {lr:g} = "
          f"{lr * 2 ** (bits + 2):.2g} unchanged" if lr else
          f"a step of lr * |u| leaves every weight above 2**{bits + 2} * lr * |u| unchanged")
    return (f"`{call.callee}` steps the model's own parameters, and {cast.evidence} with no float32 master "
            f"weights: {cast.dtype} keeps {bits} mantissa bits, so an update below 2**-{bits + 2} ≈ {lost:.2g} of "
            f"|p| rounds back to p; {at}. A side that keeps float32 masters (autocast, apex O2, DeepSpeed or "
            "Megatron bf16) applies those updates.")


RULES = [MasterWeightsInHalfPrecision()]
