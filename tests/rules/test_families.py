"""The Ascend/MindSpore rule families beyond their own examples: the data flow the walker records,
bad input that must not crash a rule, msprobe configs found on disk, and quiet checklist code."""

from __future__ import annotations

import json
import textwrap

import libcst as cst
import pytest

from acclint.config import Config
from acclint.linter.engine import scan
from acclint.linter.facts import FileFacts
from acclint.linter.walker import FileWalker
from acclint.rules import all_rules

FAMILIES = ("fused-op", "contiguity", "mixed-precision", "framework-default", "debug-tooling")
RULES = [r for r in all_rules() if r.category in FAMILIES]


def _facts(source: str) -> FileFacts:
    facts = FileFacts(path="t.py", abspath="t.py")
    FileWalker(cst.parse_module(textwrap.dedent(source)), facts).run()
    return facts


def _scan(tmp_path, files: dict, rules=RULES):
    for name, text in files.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text), encoding="utf-8")
    return scan([tmp_path], rules, Config(), jobs=1, cwd=tmp_path)


def test_name_assignments_are_recorded_after_their_right_side():
    facts = _facts("""
        def backward(ctx, grad):
            g = grad.t()
            g = g.view(-1)
    """)
    view = next(c for c in facts.calls if c.method == "view")
    assignments = [a for a in facts.name_assignments if a.name == "g"]
    assert [a.value.chain for a in assignments] == [("t",), ("view",)]
    # the second `g =` is ordered after the `.view` call it holds, so the call still sees `g = grad.t()`
    assert assignments[0].order < view.order < assignments[1].order
    assert facts.functions["backward"].params == ("ctx", "grad")


def test_method_chains_resolve_functions_and_methods():
    facts = _facts("""
        import torch
        mask = torch.tril(torch.ones(4, 4)).bool()
        w = weight.t().contiguous()
    """)
    mask, w = facts.name_assignments
    assert (mask.value.base, mask.value.base_call, mask.value.chain) == ("torch.tril", True, ("bool",))
    assert "torch.tril" in mask.value.base_names
    assert (w.value.base, w.value.base_call, w.value.chain) == ("weight", False, ("t", "contiguous"))


def test_guards_loops_and_matmul_operator():
    facts = _facts("""
        import torch
        if device.type == "cuda":
            scaler = torch.cuda.amp.GradScaler()
        else:
            scaler = None
        for x in data:
            y = a @ b.T
    """)
    scaler = next(c for c in facts.calls if c.method == "GradScaler")
    assert scaler.guard is not None and "cuda" in scaler.guard.mentions and not scaler.guard.negated
    matmul = next(c for c in facts.calls if c.callee == "@")
    assert matmul.in_loop and matmul.args[1].value.dotted == "b.T"


BAD_INPUTS = [
    "torch_npu.npu_fusion_attention(*args, **kwargs)\n",
    "import torch_npu\ntorch_npu.npu_fusion_attention()\n",
    "import torch_npu\nf = torch_npu.npu_rms_norm\nf(*xs)\n",
    "from mindspore import nn\nnn.Dropout(*a)\nnn.Conv2d(**cfg)\nnn.BatchNorm2d(momentum='x')\nnn.LayerNorm()\n",
    "import torch\n(a, *b) = x.t()\n[*c] = d\nx.t().view()\nq @ (k.transpose(-1, -2))\n",
    "class F(torch.autograd.Function):\n    def backward(ctx, *grads):\n        return grads[0].t() @ w\n",
    "import torch\nwith torch.autocast(*a, **k):\n    pass\ntorch.autocast(device_type=None).__enter__()\n",
    "from msprobe.pytorch import PrecisionDebugger\nPrecisionDebugger.start()\n(lambda: PrecisionDebugger())()\n",
    "import torch\ntorch.backends.cuda.matmul.allow_tf32 = flag\nx = y = z.t()\nx.view(1)\n",
    "lambda x: x.t().view(-1)\n",
    "def f(\n",  # syntax error: a per-file error, not a crash
]


@pytest.mark.parametrize("source", BAD_INPUTS)
def test_bad_input_never_crashes_a_rule(source, tmp_path):
    (tmp_path / "bad.py").write_text(source, encoding="utf-8")
    result = scan([tmp_path], RULES, Config(), jobs=1, cwd=tmp_path)
    for error in result.errors:
        assert error.message.startswith("syntax error"), error.message


@pytest.mark.parametrize("text", ["{", "[1, 2]", '{"task": 3, "dump_path": 1, "step": "x", "level": null}',
                                  '{"task": "tensor", "dump_path": "d", "tensor": [1]}', ""])
def test_bad_configs(text, tmp_path):
    (tmp_path / "config.json").write_text(text, encoding="utf-8")
    result = scan([tmp_path], RULES, Config(), jobs=1, cwd=tmp_path)
    assert all("internal error" not in e.message for e in result.errors)


def test_msprobe_config_found_in_a_folder_and_other_json_ignored(tmp_path):
    config = {"task": "tensor", "dump_path": "./d", "rank": [], "step": [0], "level": "L5",
              "tensor": {"scope": [], "list": [], "data_mode": ["all"]}}
    (tmp_path / "dump").mkdir()
    (tmp_path / "dump" / "config_pt.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    (tmp_path / "model_config.json").write_text('{"hidden_size": 8}', encoding="utf-8")
    (tmp_path / "data.json").write_text('{"task": "tensor", "dump_path": "x", "level": "bad"}', encoding="utf-8")
    result = scan([tmp_path], RULES, Config(), jobs=1, cwd=tmp_path)
    found = [(f.path, f.line, f.rule) for f in result.findings]
    assert found == [("dump/config_pt.json", 8, "ACL803")]  # "level": line 8 once step spans 3 lines
    assert result.files_scanned == 1 and result.skipped == [] and result.errors == []


def test_a_broken_msprobe_config_is_a_file_error(tmp_path):
    (tmp_path / "config.json").write_text('{"task": "tensor", "dump_path": "x",', encoding="utf-8")
    result = scan([tmp_path], RULES, Config(), jobs=1, cwd=tmp_path)
    assert [e.path for e in result.errors] == ["config.json"]
    assert result.errors[0].message.startswith("invalid JSON")


def test_explicit_code_is_reported_in_a_file_given_alone(tmp_path):
    files = {"layers.py": """
        import torch
        import torch_npu


        class ColumnParallel(torch.autograd.Function):
            @staticmethod
            def backward(ctx, grad_output):
                total_input, weight = ctx.saved_tensors
                return grad_output.matmul(weight), grad_output.t().matmul(total_input)


        def swiglu(x):
            return torch_npu.npu_swiglu(x, dim=-1)
    """}
    result = _scan(tmp_path, files)
    assert {(f.rule, f.line) for f in result.findings} == {("ACL502", 10), ("ACL401", 14)}


CHECKLIST = {
    "train_gpu.py": """
        import math
        import torch
        import torch.nn.functional as F


        class Linear(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                ctx.save_for_backward(x, w)
                return x @ w.t()

            @staticmethod
            def backward(ctx, grad):
                x, w = ctx.saved_tensors
                return grad @ w, grad.t().contiguous() @ x


        def attention(q, k, v):
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            out = torch.softmax(scores, dim=-1) @ v
            return out.transpose(1, 2).contiguous().view(q.shape[0], -1)


        def swiglu(x):
            a, b = x.chunk(2, dim=-1)
            return F.silu(a) * b


        model = torch.nn.Linear(8, 8).npu()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        scaler = torch.amp.GradScaler("npu")
        for x in [torch.randn(4, 8).npu()]:
            with torch.autocast(device_type="npu", dtype=torch.float16):
                loss = model(x).sum()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        with torch.autocast(device_type="npu", dtype=torch.bfloat16):
            model(torch.randn(4, 8).npu()).sum().backward()
    """,
    "train_ms.py": """
        import mindspore as ms
        from mindspore import nn


        class Net(nn.Cell):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3, pad_mode="pad", padding=1, has_bias=True)
                self.bn = nn.BatchNorm2d(8, momentum=0.9)
                self.norm = nn.LayerNorm((8,), epsilon=1e-5)
                self.act = nn.GELU(approximate=False)
                self.drop = nn.Dropout(p=0.1)
                self.emb = nn.Embedding(10, 8, embedding_table="normal")


        net = Net()
        loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        opt = nn.AdamWeightDecay(net.trainable_params(), learning_rate=1e-4, eps=1e-8, weight_decay=0.01)
        train_net = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt)
        train_net.set_train()
    """,
}


def test_checklist_code_has_nothing_at_warning_or_above(tmp_path):
    result = _scan(tmp_path, CHECKLIST)
    loud = [f"{f.path}:{f.line} {f.rule} {f.message}" for f in result.findings if f.severity != "info"]
    assert loud == []


def test_troubleshooter_fix_random_counts_as_seeding(tmp_path):
    seed_rules = [r for r in all_rules() if r.category == "seed"]
    program = """
        import random
        import numpy as np
        import torch
        {seed}

        if __name__ == "__main__":
            {call}
            random.shuffle([1, 2])
            np.random.rand(2)
            model = torch.nn.Linear(2, 2)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.ones(2)).sum().backward()
            opt.step()
    """
    seeded = _scan(tmp_path / "a", {"train.py": program.format(seed="import troubleshooter as ts",
                                                             call="ts.widget.fix_random(16)")}, seed_rules)
    unseeded = _scan(tmp_path / "b", {"train.py": program.format(seed="", call="pass")}, seed_rules)
    codes = lambda result: {f.rule for f in result.findings if f.severity == "warning"}
    assert {"ACL101", "ACL103"} <= codes(unseeded)
    assert not {"ACL101", "ACL103", "ACL104"} & codes(seeded)
