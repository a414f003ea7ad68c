"""Data flow behind the mixed-precision and attention-mask rules: what a mask means and which dtype a value
has, followed through assignments, conversions and local helpers; the GradScaler protocol and ACL102's
in-process PYTHONHASHSEED, scanned as small projects."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from acclint.config import Config
from acclint.linter.engine import scan
from acclint.linter.facts import FileFacts
from acclint.linter.walker import FileWalker
from acclint.rules import all_rules
from acclint.rules.dtype_flow import low_precision
from acclint.rules.mask_kind import kind_of

RULES = {rule.code: rule for rule in all_rules()}


def _facts(source: str) -> FileFacts:
    facts = FileFacts(path="t.py", abspath="t.py")
    FileWalker(cst.parse_module(textwrap.dedent(source)), facts).run()
    return facts


def _function(body: str, params: str = "q, s, c, keep, dtype") -> FileFacts:
    """`def f(params)`: the body's statements (one per line), then `return` of the name it computes last."""
    lines = [line.strip() for line in body.splitlines()]
    source = "import torch\n\n\ndef f(" + params + "):\n" + "".join(f"    {line}\n" for line in lines)
    returned = "m" if any(line.startswith("m ") or line.startswith("m=") for line in lines) else "y"
    return _facts(source + f"    return {returned}\n")


def _returned(facts: FileFacts, function: str = "f"):
    """The Value `function` returns, with the scope and order to evaluate it at."""
    (found,) = [r for r in facts.returns if r.scope == function]
    return found.value, function, found.order


@pytest.mark.parametrize("body,meaning,boolean", [
    ("m = torch.tril(torch.ones(s, s))", "keep", False),
    ("m = torch.tril(torch.ones(s, s, dtype=torch.bool))", "keep", True),
    ("m = torch.ones(s, s).tril().bool()", "keep", True),
    ("m = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)", "drop", True),
    ("m = torch.full((s, s), float('-inf')).triu(1)", "additive", False),
    ("k = torch.tril(torch.ones(s, s)).bool()\nm = ~k", "drop", True),
    ("k = torch.tril(torch.ones(s, s)).bool()\nm = torch.logical_not(k)", "drop", True),
    # An additive mask turned boolean: True where it held the large negative number.
    ("a = torch.zeros(s, s).masked_fill(c, float('-inf'))\nm = a.bool()", "drop", True),
    ("a = torch.zeros(s, s).masked_fill(c, torch.finfo(q.dtype).min)\nm = a != 0", "drop", True),
    ("a = torch.zeros(s, s).masked_fill(c, -1e9)\nm = a < 0", "drop", True),
    ("a = (1.0 - keep) * -10000.0\nm = a == 0", "keep", True),
    ("a = (1 - keep[:, None, None, :]) * torch.finfo(dtype).min\nm = a.eq(0)", "keep", True),
    ("neg = float('-inf')\n    a = torch.zeros(s, s).masked_fill(c, neg)\nm = a.to(torch.bool)", "drop", True),
    ("a = (1.0 - keep) * -10000.0\nm = a.unsqueeze(1).to(q.dtype)", "additive", None),
    ("d = torch.triu(torch.ones(s, s, dtype=torch.bool), 1)\nm = torch.where(d, float('-inf'), 0.0)", "additive",
     False),
    ("m = torch.tril(torch.ones(s, s))\nm = m.view(1, 1, s, s)", "keep", False),
])
def test_mask_meaning_is_followed_through_assignments_and_conversions(body, meaning, boolean):
    facts = _function(body)
    kind = kind_of(facts, *_returned(facts))
    assert kind is not None, body
    assert (kind.meaning, kind.boolean) == (meaning, boolean)


@pytest.mark.parametrize("body", [
    "m = keep.bool()",  # a parameter: its meaning is not shown
    "m = torch.zeros(s, s).masked_fill(c, 0.5).bool()",  # not a large negative fill
    "m = (torch.zeros(s, s).masked_fill(c, -1e9) == 1)",  # not a test against zero
    "m = ~torch.zeros(s, s).masked_fill(c, float('-inf'))",  # `~` of a float tensor raises: no meaning
    "m = torch.triu(torch.ones(s, s))",  # the diagonal masked too: not a causal mask
    "m = build(s).bool()",  # an unknown call
])
def test_masks_whose_meaning_the_code_does_not_show_have_no_kind(body):
    facts = _function(body)
    assert kind_of(facts, *_returned(facts)) is None


def test_a_local_helper_and_a_method_pass_their_mask_meaning_on():
    facts = _facts("""
        import torch


        def additive_mask(keep, dtype):
            bias = (1.0 - keep) * torch.finfo(dtype).min
            return bias


        class Attention:
            def _causal(self, s):
                return torch.tril(torch.ones(s, s, dtype=torch.bool))

            def f(self, keep, s):
                return ~self._causal(s)


        def f(keep, dtype):
            return additive_mask(keep, dtype) == 0
    """)
    assert kind_of(facts, *_returned(facts)).meaning == "keep"
    assert kind_of(facts, *_returned(facts, "Attention.f")).meaning == "drop"


def test_a_helper_whose_returns_disagree_has_no_meaning():
    facts = _facts("""
        import torch


        def mask(s, causal):
            if causal:
                return torch.tril(torch.ones(s, s, dtype=torch.bool))
            return torch.triu(torch.ones(s, s, dtype=torch.bool), 1)


        def f(s):
            return mask(s, True)
    """)
    assert kind_of(facts, *_returned(facts)) is None


def test_an_additive_mask_booleanised_for_both_kernels_flips_only_sdpa(tmp_path):
    """The same `.bool()` is the right polarity for npu_fusion_attention and the wrong one for SDPA."""
    source = """
        import torch
        import torch.nn.functional as F
        import torch_npu


        def attention(q, k, v, keep, heads, scale):
            additive = torch.zeros(keep.shape).masked_fill(~keep, float("-inf"))
            mask = additive.bool()
            npu = torch_npu.npu_fusion_attention(q, k, v, heads, "BNSD", atten_mask=mask, scale=scale)[0]
            gpu = F.scaled_dot_product_attention(q, k, v, mask)
            return npu, gpu
    """
    (tmp_path / "attn.py").write_text(textwrap.dedent(source), encoding="utf-8")
    result = scan([tmp_path], [RULES["ACL404"]], Config(), jobs=1, cwd=tmp_path)
    assert [(f.line, "True where a position is masked out" in f.message.replace("true", "True"))
            for f in result.findings] == [(11, True)]


@pytest.mark.parametrize("body,dtype", [
    ("x = h.bfloat16()\ny = x.view(-1, 8)", "bfloat16"),
    ("y = h.to(torch.float16).reshape(-1)", "float16"),
    ("y = h.to(dtype=torch.bfloat16) / 2.0", "bfloat16"),
    ("y = h.half().to('npu')", "float16"),
])
def test_low_precision_is_known_only_from_casts_the_code_shows(body, dtype):
    facts = _function(body, "h")
    assert low_precision(facts, *_returned(facts))[0] == dtype


@pytest.mark.parametrize("body", [
    "y = h.bfloat16().float()",
    "y = h.half().to(torch.float32)",
    "y = h.bfloat16().to(dtype)",  # a dtype the code does not name
    "y = h.bfloat16() / scale",  # the divisor may be an fp32 tensor
    "y = model(h)",
])
def test_unknown_or_upcast_values_are_not_low_precision(body):
    facts = _function(body, "h, dtype, scale, model")
    assert low_precision(facts, *_returned(facts)) is None


def _scan(tmp_path, files: dict, code: str):
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return scan([tmp_path], [RULES[code]], Config(preview=True), jobs=1, cwd=tmp_path).findings


def test_a_scaler_stepped_in_another_method_still_counts(tmp_path):
    findings = _scan(tmp_path, {"trainer.py": """
        import torch


        class Trainer:
            def __init__(self, model):
                self.optimizer = torch.optim.AdamW(model.parameters())
                self.scaler = torch.amp.GradScaler()

            def backward(self, loss):
                self.scaler.scale(loss).backward()

            def step(self):
                self.scaler.step(self.optimizer)
                self.scaler.update()
    """}, "ACL613")
    assert findings == []


def test_a_scheduler_step_after_scaling_is_not_an_optimizer_step(tmp_path):
    findings = _scan(tmp_path, {"train.py": """
        import torch

        def train(model, optimizer, lr_scheduler, loss):
            scaler = torch.cuda.amp.GradScaler()
            scaler.scale(loss).backward()
            lr_scheduler.step()
            optimizer.step()
    """}, "ACL613")
    assert [(f.line, "optimizer.step" in f.message) for f in findings] == [(8, True)]


def test_pythonhashseed_set_by_a_helper_is_reported_at_the_helper_call(tmp_path):
    findings = _scan(tmp_path, {
        "seeding.py": """
            import os
            import random


            def seed_all(seed):
                random.seed(seed)
                os.environ["PYTHONHASHSEED"] = str(seed)
        """,
        "train.py": """
            import torch
            from seeding import seed_all

            if __name__ == "__main__":
                seed_all(0)
                torch.manual_seed(0)
                model = torch.nn.Linear(2, 1)
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.ones(2)).sum().backward()
                opt.step()
        """,
    }, "ACL102")
    assert [(f.path, f.line) for f in findings] == [("seeding.py", 8)]
    assert "only at start-up" in findings[0].message


def test_a_launch_export_fixes_pythonhashseed_whatever_the_program_writes(tmp_path):
    findings = _scan(tmp_path, {
        "run.sh": "#!/bin/bash\nexport PYTHONHASHSEED=0\ntorchrun --nproc_per_node 8 train.py\n",
        "train.py": """
            import os
            import torch

            if __name__ == "__main__":
                os.environ["PYTHONHASHSEED"] = "0"
                torch.manual_seed(0)
                model = torch.nn.Linear(2, 1)
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.ones(2)).sum().backward()
                opt.step()
        """,
    }, "ACL102")
    assert findings == []


@pytest.mark.parametrize("helper,call,meaning", [
    ("def h(mask):\n    return ~mask.bool()\n", "h(a)", "keep"),
    ("def h(mask):\n    return mask.bool()\n", "h(a)", "drop"),
    ("def h(scale, mask=None):\n    return mask == 0\n", "h(1.0, mask=a)", "keep"),
    ("def h(x):\n    return x\n", "h(a).bool()", "drop"),
])
def test_a_helper_means_what_its_argument_means_converted(helper, call, meaning):
    source = ("import torch\n\n\n" + helper + "\n\ndef f(s, c):\n"
              "    a = torch.zeros(s, s).masked_fill(c, float('-inf'))\n"
              f"    m = {call}\n    return m\n")
    facts = _facts(source)
    kind = kind_of(facts, *_returned(facts))
    assert kind is not None and kind.meaning == meaning


def test_a_helpers_parameter_is_unknown_when_its_caller_passes_an_unknown_mask():
    facts = _facts("import torch\n\n\ndef h(mask):\n    return ~mask.bool()\n\n\ndef f(given):\n    return h(given)\n")
    assert kind_of(facts, *_returned(facts)) is None
