"""`acclint diff` of model code: an operation computed by a fused kernel on one side and by composed
ops (or another variant) on the other is a `fused-op` row with both lines and its numeric
consequence; identical or equally fused models give nothing. Fixtures: tests/setups/fixtures/models."""

from __future__ import annotations

import json
from pathlib import Path
from textwrap import dedent

import pytest
from click.testing import CliRunner
from setup_helpers import FIXTURES, by_key, line_of

from acclint.cli import main
from acclint.setups import NothingToCompare, diff_paths
from acclint.setups.diff import Mismatch
from acclint.setups.model import sources
from acclint.setups.model.read import ModelSide, read_model
from acclint.setups.record import Setting, Where

MODELS = FIXTURES / "models"
GPU_BLOCK, NPU_BLOCK, NPU_ALIASED = MODELS / "gpu_block.py", MODELS / "npu_block.py", MODELS / "npu_block_aliased.py"
TORCH_MLP, MS_MLP = MODELS / "torch_mlp.py", MODELS / "ms_mlp.py"

SWIGLU_COMPOSED = """\
    import torch
    import torch.nn.functional as F


    def swiglu(x):
        a, b = torch.chunk(x, 2, dim=-1)
        return F.silu(a) * b
"""
SWIGLU_FUSED = """\
    import torch_npu


    def swiglu(x):
        return torch_npu.npu_swiglu(x, dim=-1)
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(dedent(text), encoding="utf-8")
    return path


def invoke(*args):
    return CliRunner().invoke(main, ["diff", *map(str, args)])


def rows(left: Path, right: Path, **options) -> dict:
    return by_key(diff_paths(str(left), str(right), **options))


# ---------------------------------------------------------------- the guide's swiglu case


def test_fused_swiglu_vs_composed_is_one_row_with_both_lines_and_the_consequence(tmp_path: Path):
    left = write(tmp_path, "gpu_model.py", SWIGLU_COMPOSED)
    right = write(tmp_path, "npu_model.py", SWIGLU_FUSED)
    result = invoke(left, right)
    assert result.exit_code == 1, result.output
    assert "no training settings" not in result.output
    row = rows(left, right)["swiglu"]
    assert row.category == "fused-op"
    assert row.left.where == Where(str(left), line_of(left, "F.silu(a) * b"))
    assert row.right.where == Where(str(right), line_of(right, "npu_swiglu"))
    assert f"{left}:{row.left.where.line}" in row.message and f"{right}:{row.right.where.line}" in row.message
    assert "guides.md#the-swiglu-case" in row.consequence and row.consequence in row.message


def test_identical_model_files_report_nothing_and_exit_0(tmp_path: Path):
    model = write(tmp_path, "model.py", SWIGLU_COMPOSED)
    result = invoke(model, model)
    assert result.exit_code == 0, result.output
    assert "No differences" in result.output
    assert invoke(GPU_BLOCK, GPU_BLOCK).exit_code == 0


def test_the_setup_diffs_fused_call_key_gives_way_to_the_model_row():
    """The existing fixtures also write a setting (determinism): both diffs run, one swiglu row."""
    result = diff_paths(str(FIXTURES / "model_gpu.py"), str(FIXTURES / "model_npu.py"))
    keys = [m.key for m in result.mismatches]
    assert "swiglu" in keys and "npu_swiglu" not in keys and "deterministic" in keys
    same = diff_paths(str(FIXTURES / "model_npu.py"), str(FIXTURES / "model_npu.py"))
    assert same.mismatches == [] and same.same == ["swiglu"]


# ---------------------------------------------------------------- every operation of a block


def test_gpu_block_vs_npu_block_reports_each_operation_at_its_lines():
    found = rows(GPU_BLOCK, NPU_BLOCK)
    expected = {
        "rms-norm": ("torch.rsqrt(variance", "npu_rms_norm"),
        "rotary-embedding": ("rotate_half(x) * sin", "npu_rotary_mul"),
        "attention": ("F.softmax(scores", "npu_fusion_attention"),
        "swiglu": ("self.act(gate) * up", "npu_swiglu"),
        "gelu": ('approximate="tanh"', "F.gelu(self.proj(x))"),
    }
    assert set(found) == set(expected)
    for key, (left_text, right_text) in expected.items():
        row = found[key]
        assert row.left.where.line == line_of(GPU_BLOCK, left_text), key
        assert row.right.where.line == line_of(NPU_BLOCK, right_text), key
        assert row.category == "fused-op" and row.consequence, key
    assert "4.7e-4" in found["gelu"].message and "tanh" in found["gelu"].left.value
    assert "scale defaults to 1.0" in found["attention"].message


def test_both_sides_fused_report_nothing_however_the_calls_are_spelled():
    result = diff_paths(str(NPU_BLOCK), str(NPU_ALIASED))
    assert result.mismatches == []
    assert {"rms-norm", "rotary-embedding", "attention", "swiglu", "gelu"} <= set(result.same)
    assert invoke(NPU_BLOCK, NPU_ALIASED).exit_code == 0


def test_rows_follow_the_lefts_source_order():
    lines = [m.left.where.line for m in diff_paths(str(GPU_BLOCK), str(NPU_BLOCK)).mismatches]
    assert lines == sorted(lines)


# ---------------------------------------------------------------- single forms


@pytest.mark.parametrize(("left_code", "right_code", "differs"), [
    ('F.gelu(x, approximate="tanh")', "F.gelu(x)", True),
    ("F.gelu(x)", 'nn.GELU(approximate="none")(x)', False),
    ('nn.GELU(approximate="tanh")(x)', "F.gelu(x, approximate='tanh')", False),
    ("torch_npu.fast_gelu(x)", "F.gelu(x)", True),
    ("F.gelu(x, approximate=mode)", "F.gelu(x)", None),  # not a literal: no form to compare
])
def test_gelu_variants(tmp_path: Path, left_code: str, right_code: str, differs):
    header = ("import torch_npu\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"
              "def act(x, mode):\n    return ")
    left = write(tmp_path, "left.py", header + left_code + "\n")
    right = write(tmp_path, "right.py", header + right_code + "\n")
    if differs is None:
        with pytest.raises(NothingToCompare):
            diff_paths(str(left), str(right))
        return
    result = diff_paths(str(left), str(right))
    assert ("gelu" in by_key(result)) is differs
    assert ("gelu" in result.same) is not differs


def test_rms_norm_forms_and_a_composed_layer_norm_is_not_an_rms_norm(tmp_path: Path):
    composed_rms = write(tmp_path, "rms.py", """\
        import torch


        def rms_norm(x, weight, eps=1e-6):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
    """)
    torch_rms = write(tmp_path, "torch_rms.py", """\
        from torch import nn

        norm = nn.RMSNorm(64, eps=1e-6)
    """)
    composed_ln = write(tmp_path, "ln.py", """\
        import torch


        def layer_norm(x, weight, bias, eps=1e-5):
            mean = x.mean(-1, keepdim=True)
            var = ((x - mean) ** 2).mean(-1, keepdim=True)
            return (x - mean) / torch.sqrt(var + eps) * weight + bias
    """)
    library_ln = write(tmp_path, "library_ln.py", """\
        import torch.nn.functional as F


        def layer_norm(x, weight, bias):
            return F.layer_norm(x, x.shape[-1:], weight, bias)
    """)
    row = rows(composed_rms, torch_rms)["rms-norm"]
    assert (row.left.value, row.right.value) == ("composed x * rsqrt(mean(x^2) + eps)", "torch RMSNorm")
    layer = rows(composed_ln, library_ln)
    assert set(layer) == {"layer-norm"} and layer["layer-norm"].left.where.line == line_of(composed_ln, "torch.sqrt")
    with pytest.raises(NothingToCompare):  # an RMSNorm and a LayerNorm are not one operation
        diff_paths(str(composed_rms), str(composed_ln))


def test_centring_and_numpy_decide_which_norm_a_square_root_is(tmp_path: Path):
    """A subtraction that does not centre (reduced dims counted backwards) keeps an RMSNorm one;
    numpy's sqrt of a difference is no LayerNorm."""
    rms_dims = write(tmp_path, "rms_dims.py", """\
        import torch


        def rms_norm(x, shape, eps):
            dims = tuple(range(-1, -len(shape) - 1, -1))
            variance = x.float().pow(2).mean(dims, keepdim=True)
            return x * torch.rsqrt(variance + eps)
    """)
    numpy_sqrt = write(tmp_path, "numpy_sqrt.py", """\
        import numpy as np
        import torch.nn.functional as F


        def resize(area, ratio, low):
            return round(np.sqrt(area * ratio - low))


        def norm(x):
            return F.layer_norm(x, x.shape[-1:])
    """)
    fused = write(tmp_path, "fused.py", """\
        import torch_npu


        def rms_norm(x, weight):
            return torch_npu.npu_rms_norm(x, weight)[0]
    """)
    assert rows(rms_dims, fused)["rms-norm"].left.where.line == line_of(rms_dims, "torch.rsqrt")
    assert [o.form.operation for o in read_model(str(numpy_sqrt)).occurrences] == ["layer-norm"]


def test_a_config_chosen_activation_module_in_a_gated_product_is_the_composed_swiglu(tmp_path: Path):
    hf_style = write(tmp_path, "hf_mlp.py", """\
        from torch import nn
        from transformers.activations import ACT2FN


        class GatedMLP(nn.Module):
            def forward(self, x):
                return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))

            def __init__(self, config):
                super().__init__()
                self.act_fn = ACT2FN[config.hidden_act]
    """)
    row = rows(hf_style, NPU_BLOCK)["swiglu"]
    assert row.left.where.line == line_of(hf_style, "self.act_fn(self.gate_proj(x))")
    assert "hidden_act" in row.message


STANDARDISED = """\
    import torch
    from torch import nn


    class StdConv(nn.Conv2d):
        def forward(self, x):
            w = self.weight
            mean = w.mean((1, 2, 3), keepdim=True)
            w = (w - mean) / torch.sqrt(w.var((1, 2, 3), keepdim=True) + 1e-10)
            return self._conv_forward(x, w, self.bias)


    class Block(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.norm = NORM
"""


def test_classes_of_the_same_name_are_compared_with_each_other(tmp_path: Path):
    library = write(tmp_path, "library.py", STANDARDISED.replace("NORM", "nn.LayerNorm(dim)"))
    apex = write(tmp_path, "apex.py", "from apex.normalization import FusedLayerNorm\n"
                 + dedent(STANDARDISED).replace("NORM", "FusedLayerNorm(dim)"))
    again = write(tmp_path, "again.py", STANDARDISED.replace("NORM", "nn.LayerNorm(dim, eps=1e-6)"))
    assert "layer-norm" in diff_paths(str(library), str(again)).same  # StdConv's with StdConv's
    block_only = write(tmp_path, "block_only.py", """\
        from torch import nn


        class Block(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.norm = nn.LayerNorm(dim)
    """)
    assert "layer-norm" in diff_paths(str(library), str(block_only)).same  # a standardisation pairs with nothing
    row = rows(library, apex)["layer-norm"]
    assert (row.left.value, row.right.value) == ("LayerNorm module/function", "apex FusedLayerNorm")
    assert row.right.where.line == line_of(apex, "self.norm = FusedLayerNorm")


def test_attention_fused_vs_sdpa_and_sdpa_vs_composed(tmp_path: Path):
    sdpa = write(tmp_path, "sdpa.py", """\
        import torch.nn.functional as F


        def attend(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    """)
    fused = rows(GPU_BLOCK, sdpa)["attention"]
    assert fused.right.value == "F.scaled_dot_product_attention" and "picks its backend" in fused.message
    assert rows(sdpa, NPU_BLOCK)["attention"].right.where.line == line_of(NPU_BLOCK, "npu_fusion_attention")


def test_a_side_with_both_forms_names_the_other_one(tmp_path: Path):
    switch = write(tmp_path, "switch.py", """\
        import torch.nn.functional as F
        import torch_npu


        def swiglu(x, fused):
            if fused:
                return torch_npu.npu_swiglu(x)
            a, b = x.chunk(2, dim=-1)
            return F.silu(a) * b
    """)
    left = write(tmp_path, "left.py", SWIGLU_COMPOSED)
    row = rows(left, switch)["swiglu"]
    assert row.right.where.line == line_of(switch, "npu_swiglu")
    assert f"also composed silu(a) * b at {switch}:{line_of(switch, 'F.silu(a) * b')}" in row.message


def test_fused_adamw_vs_plain_replaces_the_setup_diffs_fused_optimizer_key(tmp_path: Path):
    plain = write(tmp_path, "gpu_train.py", """\
        import torch

        model = torch.nn.Linear(4, 4)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    """)
    fused = write(tmp_path, "npu_train.py", """\
        import torch
        import torch_npu

        model = torch.nn.Linear(4, 4)
        optimizer = torch_npu.optim.NpuFusedAdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    """)
    torch_fused = write(tmp_path, "torch_fused.py", plain.read_text(encoding="utf-8").replace(
        "weight_decay=0.1)", "weight_decay=0.1, fused=True)"))
    result = diff_paths(str(plain), str(fused))
    row = by_key(result)["adam"]
    assert (row.left.value, row.right.value) == ("torch.optim Adam(W), unfused", "fused Adam(W)")
    assert row.right.where.line == line_of(fused, "NpuFusedAdamW")
    assert "NpuFusedAdamW" not in by_key(result) and "NpuFusedAdamW" not in result.only_right
    assert "adam" in diff_paths(str(torch_fused), str(fused)).same


# ---------------------------------------------------------------- PyTorch vs MindSpore


def test_torch_vs_mindspore_port_fused_op_rows_and_the_framework_default_source():
    found = rows(TORCH_MLP, MS_MLP)
    assert found["swiglu"].left.where.line == line_of(TORCH_MLP, "torch_npu.npu_swiglu(")
    assert found["swiglu"].right.where.line == line_of(MS_MLP, "ops.silu(gate) * up")
    assert found["gelu"].right.where.line == line_of(MS_MLP, "nn.GELU()")
    epsilon = found["layernorm-default-epsilon"]
    assert epsilon.category == "framework-default"
    assert (epsilon.left.value, epsilon.right.value) == ("eps=1e-5", "epsilon=1e-7")
    assert epsilon.right.where.line == line_of(MS_MLP, "nn.LayerNorm")
    assert "layer-norm" in diff_paths(str(TORCH_MLP), str(MS_MLP)).same


def test_mindspore_primitives_built_in_init_are_followed_into_the_attention(tmp_path: Path):
    composed = write(tmp_path, "ms_attention.py", """\
        from mindspore import nn, ops


        class Attention(nn.Cell):
            def __init__(self, scale):
                super().__init__()
                self.scale = scale
                self.batch_matmul = ops.BatchMatMul(transpose_b=True)
                self.softmax = ops.Softmax(axis=-1)

            def construct(self, q, k, v):
                scores = self.batch_matmul(q, k) * self.scale
                return ops.matmul(self.softmax(scores), v)
    """)
    fused = write(tmp_path, "ms_fused.py", """\
        from mindspore import nn, ops


        class Attention(nn.Cell):
            def construct(self, q, k, v, heads):
                return ops.flash_attention_score(q, k, v, heads, input_layout="BSH")
    """)
    row = rows(composed, fused)["attention"]
    assert row.left.where.line == line_of(composed, "self.softmax(scores)")
    assert row.right.where.line == line_of(fused, "flash_attention_score")


def test_an_explicit_mindspore_epsilon_is_no_default_row(tmp_path: Path):
    text = MS_MLP.read_text(encoding="utf-8").replace("nn.LayerNorm((dim,))", "nn.LayerNorm((dim,), epsilon=1e-5)")
    explicit = write(tmp_path, "ms_explicit.py", text)
    assert "layernorm-default-epsilon" not in rows(TORCH_MLP, explicit)


def test_a_registered_row_source_adds_its_rows(monkeypatch):
    monkeypatch.setattr(sources, "_SOURCES", list(sources._SOURCES))

    @sources.register
    def first_call(left: ModelSide, right: ModelSide) -> sources.Rows:
        (left_file, left_call), (right_file, right_call) = next(left.calls()), next(right.calls())
        settings = [Setting("first-call", file.where(call).line, file.where(call)) for file, call in
                    ((left_file, left_call), (right_file, right_call))]
        return sources.Rows(mismatches=[Mismatch("first-call", "framework-default", *settings, "lines differ")])

    assert sources.register(first_call) is first_call and sources.sources().count(first_call) == 1
    row = rows(GPU_BLOCK, NPU_BLOCK)["first-call"]
    assert row.left.where.path == str(GPU_BLOCK) and row.right.where.path == str(NPU_BLOCK)


# ---------------------------------------------------------------- reports and the command line


def test_json_rows_have_the_contract_shape():
    result = invoke(GPU_BLOCK, NPU_BLOCK, "--format", "json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    row = next(m for m in report["mismatches"] if m["key"] == "swiglu")
    assert set(row) >= {"key", "category", "left", "right", "left_location", "right_location", "message",
                        "consequence"}
    assert (row["category"], row["left"], row["right"]) == ("fused-op", "composed silu(a) * b", "fused npu_swiglu")
    assert row["left_location"] == {"path": str(GPU_BLOCK), "line": line_of(GPU_BLOCK, "self.act(gate) * up")}
    assert row["right_location"] == {"path": str(NPU_BLOCK), "line": line_of(NPU_BLOCK, "npu_swiglu")}
    assert row["consequence"] in row["message"]


def test_text_and_github_reports():
    text = invoke(GPU_BLOCK, NPU_BLOCK).output
    swiglu = next(line for line in text.splitlines() if line.startswith("swiglu"))
    assert f"{GPU_BLOCK}:{line_of(GPU_BLOCK, 'self.act(gate) * up')}" in swiglu
    assert f"{NPU_BLOCK}:{line_of(NPU_BLOCK, 'npu_swiglu')}" in swiglu
    github = invoke(GPU_BLOCK, NPU_BLOCK, "--format", "github").output
    annotation = next(line for line in github.splitlines() if "swiglu [fused-op]" in line)
    assert annotation.startswith(f"::warning file={NPU_BLOCK},line={line_of(NPU_BLOCK, 'npu_swiglu')},")


def test_ignore_by_key_or_category():
    assert "gelu" not in {m["key"] for m in json.loads(invoke(GPU_BLOCK, NPU_BLOCK, "--format", "json",
                                                              "--ignore", "gelu").stdout)["mismatches"]}
    everything = invoke(GPU_BLOCK, NPU_BLOCK, "--ignore", "fused-op")
    assert everything.exit_code == 0, everything.output


def test_folder_pair_compares_the_model_code_in_it(tmp_path: Path):
    for side, source in (("gpu", GPU_BLOCK), ("npu", NPU_BLOCK)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "block.py").write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    found = rows(tmp_path / "gpu", tmp_path / "npu")
    assert found["swiglu"].right.where.path == str(tmp_path / "npu" / "block.py")


def test_nothing_to_compare_and_bad_input_exit_2(tmp_path: Path):
    plain = write(tmp_path, "plain.py", "def add(a, b):\n    return a + b\n")
    result = invoke(plain, GPU_BLOCK)
    assert result.exit_code == 2 and "no training settings or model operations found in" in result.output
    assert str(plain) in result.output and "Traceback" not in result.output
    broken = write(tmp_path, "broken.py", "def f(:\n")
    result = invoke(broken, GPU_BLOCK)
    assert result.exit_code == 2 and "syntax error" in result.output and "Traceback" not in result.output
    assert invoke(tmp_path / "missing.py", GPU_BLOCK).exit_code == 2


def test_reading_a_side_keeps_every_file_of_a_folder():
    side = read_model(str(MODELS))
    assert {Path(f.facts.path).name for f in side.files} >= {"gpu_block.py", "npu_block.py", "ms_mlp.py"}
