"""`acclint diff` of model code beyond the form of an operation: a norm epsilon, a dropout
probability or an fp32 upcast that differs between the matching classes of the two sides, and
classes paired by position when their names differ. Fixtures: tests/setups/fixtures/models."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from textwrap import dedent

import pytest
from setup_helpers import FIXTURES, by_key, line_of

from acclint.knowledge import table
from acclint.setups import NothingToCompare, diff_paths
from acclint.setups.model import read_model
from acclint.setups.model.scopes import pair_by_position

MODELS = FIXTURES / "models"
GPU, NPU = MODELS / "values_gpu.py", MODELS / "values_npu.py"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(dedent(text), encoding="utf-8")
    return path


def rows(left: Path, right: Path) -> dict:
    return by_key(diff_paths(str(left), str(right)))


def test_epsilon_dropout_and_upcast_rows_with_both_lines():
    found = rows(GPU, NPU)
    assert set(found) == {"layer-norm-epsilon", "dropout", "attention-upcast"}
    epsilon = found["layer-norm-epsilon"]
    assert (epsilon.left.value, epsilon.right.value) == (1e-5, 1e-6) and epsilon.category == "model-config"
    assert epsilon.left.where.line == line_of(GPU, "nn.LayerNorm(dim, eps=1e-5)")
    assert epsilon.right.where.line == line_of(NPU, "nn.LayerNorm(dim, eps=1e-6)")
    dropout = found["dropout"]  # the attention's, paired with the attention's: 0.1 vs 0.0
    assert (dropout.left.value, dropout.right.value) == (0.1, 0.0)
    assert dropout.right.where.line == line_of(NPU, "nn.Dropout(0.0)")
    upcast = found["attention-upcast"]
    assert upcast.category == "mixed-precision"
    assert upcast.left.where.line == line_of(GPU, "F.softmax(scores")
    assert upcast.right.where.line == line_of(NPU, "F.softmax(scores")
    assert "upcast to fp32" in upcast.left.value and "input dtype" in upcast.right.value
    assert "only on the left" in upcast.message
    for row in found.values():
        assert f"{GPU}:{row.left.where.line}" in row.message and f"{NPU}:{row.right.where.line}" in row.message


def test_identical_models_have_every_value_the_same():
    result = diff_paths(str(GPU), str(GPU))
    assert result.mismatches == []
    assert {"layer-norm-epsilon", "dropout", "attention-upcast", "rms-norm-upcast"} <= set(result.same)


def test_each_norm_family_has_its_own_epsilon_row(tmp_path: Path):
    torch_side = write(tmp_path, "torch_side.py", """\
        from torch import nn

        norm = nn.LayerNorm(8, eps=1e-5)
        bn = nn.BatchNorm2d(8, eps=1e-3)
    """)
    ms_side = write(tmp_path, "ms_side.py", """\
        from mindspore import nn

        norm = nn.LayerNorm((8,), epsilon=1e-6)
        bn = nn.BatchNorm2d(8, eps=1e-5)
    """)
    found = rows(torch_side, ms_side)
    assert (found["layer-norm-epsilon"].left.value, found["layer-norm-epsilon"].right.value) == (1e-5, 1e-6)
    assert found["batch-norm-epsilon"].right.where.line == line_of(ms_side, "BatchNorm2d")


def test_classes_of_other_names_pair_by_position_when_they_compute_the_same():
    assert pair_by_position(read_model(str(GPU)), read_model(str(NPU))) == {
        "NpuRMSNorm": "TinyRMSNorm", "NpuAttention": "TinyAttention", "NpuMLP": "TinyMLP"}
    row = rows(GPU, NPU)["layer-norm-epsilon"]
    assert "in NpuMLP, paired with TinyMLP by position" in row.message


def test_a_class_that_computes_something_else_is_not_paired(tmp_path: Path):
    """Without the pairing the attention's 0.0 would meet the MLP's 0.0 and hide the 0.1."""
    text = NPU.read_text(encoding="utf-8").replace(
        "        probs = F.softmax(scores, dim=-1)\n", "        probs = torch.sigmoid(scores)\n")
    other = write(tmp_path, "other.py", text)
    pairs = pair_by_position(read_model(str(GPU)), read_model(str(other)))
    assert "NpuAttention" not in pairs and pairs["NpuMLP"] == "TinyMLP"


def test_order_matters_a_class_inserted_between_does_not_shift_the_pairs(tmp_path: Path):
    text = NPU.read_text(encoding="utf-8").replace(
        "class NpuAttention", "class Helper(nn.Module):\n    def forward(self, x):\n        return x\n\n\nclass NpuAttention")
    shifted = write(tmp_path, "shifted.py", text)
    pairs = pair_by_position(read_model(str(GPU)), read_model(str(shifted)))
    assert pairs == {"NpuRMSNorm": "TinyRMSNorm", "NpuAttention": "TinyAttention", "NpuMLP": "TinyMLP"}


def test_same_name_classes_are_never_repaired(tmp_path: Path):
    renamed = write(tmp_path, "renamed.py", NPU.read_text(encoding="utf-8").replace("Npu", "Tiny"))
    assert pair_by_position(read_model(str(GPU)), read_model(str(renamed))) == {}
    assert set(rows(GPU, renamed)) == {"layer-norm-epsilon", "dropout", "attention-upcast"}


@pytest.mark.parametrize(("left_code", "right_code", "key", "values"), [
    ("nn.LayerNorm(8)", "nn.LayerNorm(8, eps=1e-6)", "layer-norm-epsilon", (1e-5, 1e-6)),
    ("nn.LayerNorm(8, 1e-6)", "nn.LayerNorm(8, eps=1e-6)", "layer-norm-epsilon", None),
    ("nn.GroupNorm(2, 8, eps=1e-6)", "nn.GroupNorm(2, 8)", "group-norm-epsilon", (1e-6, 1e-5)),
    ("LlamaRMSNorm(8, eps=1e-6)", "LlamaRMSNorm(8, eps=1e-5)", "rms-norm-epsilon", (1e-6, 1e-5)),
    ("nn.Dropout()", "nn.Dropout(0.5)", "dropout", None),
    ("nn.Dropout(p=0.2)", "F.dropout(x, 0.1)", "dropout", (0.2, 0.1)),
])
def test_single_values(tmp_path: Path, left_code: str, right_code: str, key: str, values):
    header = ("import torch.nn.functional as F\nfrom torch import nn\nfrom model import LlamaRMSNorm\n\n\n"
              "def build(x):\n    return ")
    left = write(tmp_path, "left.py", header + left_code + "\n")
    right = write(tmp_path, "right.py", header + right_code + "\n")
    result = diff_paths(str(left), str(right))
    found = by_key(result)
    if values is None:
        assert key not in found and key in result.same
    else:
        assert (found[key].left.value, found[key].right.value) == values


def test_mindspore_keep_prob_is_read_as_its_complement(tmp_path: Path):
    torch_side = write(tmp_path, "torch_side.py", "from torch import nn\n\ndrop = nn.Dropout(p=0.1)\n")
    ms_side = write(tmp_path, "ms_side.py", "from mindspore import nn\n\ndrop = nn.Dropout(keep_prob=0.9)\n")
    ms_other = write(tmp_path, "ms_other.py", "from mindspore import nn\n\ndrop = nn.Dropout(keep_prob=0.8)\n")
    assert "dropout" in diff_paths(str(torch_side), str(ms_side)).same
    row = rows(torch_side, ms_other)["dropout"]
    assert row.right.value == pytest.approx(0.2) and "keep_prob=0.8" in row.message


def test_a_dropout_read_from_a_config_leaves_the_setup_row_in_place(tmp_path: Path):
    """`nn.Dropout(args.dropout)` is the setup diff's (it follows argparse); no model row hides it."""
    left = write(tmp_path, "left.py", """\
        import argparse
        from torch import nn

        parser = argparse.ArgumentParser()
        parser.add_argument("--dropout", type=float, default=0.1)
        args = parser.parse_args()
        drop = nn.Dropout(args.dropout)
    """)
    right = write(tmp_path, "right.py", "from torch import nn\n\ndrop = nn.Dropout(0.3)\n")
    row = rows(left, right)["dropout"]
    assert (row.left.value, row.right.value) == (0.1, 0.3)
    assert row.left.where.line == line_of(left, "--dropout")


def test_upcasts_of_a_composed_rms_norm(tmp_path: Path):
    upcast = write(tmp_path, "upcast.py", """\
        import torch


        def rms_norm(x, weight, eps):
            x = x.float()
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
    """)
    plain = write(tmp_path, "plain.py", """\
        import torch


        def rms_norm(x, weight, eps):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
    """)
    downcast = write(tmp_path, "downcast.py", """\
        import torch


        def rms_norm(x, weight, eps):
            x = x.to(torch.bfloat16)
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
    """)
    row = rows(upcast, plain)["rms-norm-upcast"]
    assert row.left.where.line == line_of(upcast, "torch.rsqrt") and "only on the left" in row.message
    assert "rms-norm-upcast" in diff_paths(str(plain), str(downcast)).same  # a cast to bf16 is no upcast


def test_the_tables_defaults_are_the_installed_frameworks():
    import mindspore
    import torch

    modules = {"torch": torch, "mindspore": mindspore}
    for kind, entry in table("model_values")["values"].items():
        for spec in entry.get("calls", ()):
            if "default" not in spec:
                continue
            for name in spec["calls"]:
                head, *rest = name.split(".")
                if head not in modules:
                    continue  # torch_npu is not installed here: docs/knowledge/fused-ops.md#npu_rms_norm
                target = modules[head]
                for part in rest:
                    target = getattr(target, part)
                parameter = inspect.signature(target).parameters[spec["keywords"][0]]
                assert parameter.default == spec["default"], (kind, name)
                assert list(inspect.signature(target).parameters).index(spec["keywords"][0]) == spec["position"], name


def test_epsilons_compare_within_one_family_and_two_defaults_are_no_row(tmp_path: Path):
    """A BatchNorm's 1e-5 is no LayerNorm's; two different framework defaults are the
    framework-default source's row, not this one's."""
    batch = write(tmp_path, "batch.py", "from torch import nn\n\nnorm = nn.BatchNorm2d(8)\n")
    layer = write(tmp_path, "layer.py", "from torch import nn\n\nnorm = nn.LayerNorm(8, eps=1e-6)\n")
    ms_layer = write(tmp_path, "ms_layer.py", "from mindspore import nn\n\nnorm = nn.LayerNorm((8,))\n")
    torch_layer = write(tmp_path, "torch_layer.py", "from torch import nn\n\nnorm = nn.LayerNorm(8)\n")
    with pytest.raises(NothingToCompare):  # nothing in common to compare, and no row
        diff_paths(str(batch), str(layer))
    found = rows(torch_layer, ms_layer)
    assert "layer-norm-epsilon" not in found and "layernorm-default-epsilon" in found
    assert rows(layer, ms_layer)["layer-norm-epsilon"].right.value == 1e-7  # written 1e-6 vs default 1e-7


def test_subtractions_that_follow_each_other_end(tmp_path: Path):
    """`x = x - y; y = y - x`: the check for a centring subtraction followed these without end."""
    chain = write(tmp_path, "chain.py", """\
        import torch


        def norm(x, y):
            x = x - y
            y = y - x
            x = x - y
            return torch.sqrt(x.mean() + y)
    """)
    side = read_model(str(chain))
    assert side.problems == [] and len(side.files) == 1


def test_an_upcast_in_the_caller_of_a_norm_helper_counts(tmp_path: Path):
    helper = write(tmp_path, "helper.py", """\
        import torch
        from torch import nn


        class RMSNorm(nn.Module):
            def _norm(self, x):
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

            def forward(self, x):
                return self._norm(x.float()).type_as(x) * self.weight
    """)
    inline = write(tmp_path, "inline.py", """\
        import torch
        from torch import nn


        class RMSNorm(nn.Module):
            def forward(self, x):
                x = x.float()
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
    """)
    assert "rms-norm-upcast" in diff_paths(str(helper), str(inline)).same
    no_upcast = write(tmp_path, "no_upcast.py", helper.read_text(encoding="utf-8").replace("x.float()", "x"))
    assert "rms-norm-upcast" in rows(inline, no_upcast)


def test_the_cli_reports_the_rows_in_text_and_json():
    from click.testing import CliRunner

    from acclint.cli import main

    text = CliRunner().invoke(main, ["diff", str(GPU), str(NPU)])
    assert text.exit_code == 1, text.output
    assert "Found 3 differences" in text.output and "model-code items the same" in text.output
    report = json.loads(CliRunner().invoke(main, ["diff", str(GPU), str(NPU), "--format", "json"]).output)
    by_key_json = {m["key"]: m for m in report["mismatches"]}
    assert set(by_key_json) == {"layer-norm-epsilon", "dropout", "attention-upcast"}
    upcast = by_key_json["attention-upcast"]
    assert upcast["right_location"] == {"path": str(NPU), "line": line_of(NPU, "F.softmax(scores")}
    assert upcast["consequence"] and upcast["category"] == "mixed-precision"


def test_top_level_functions_pair_by_position_too(tmp_path: Path):
    left = write(tmp_path, "left.py", """\
        import torch
        import torch.nn.functional as F


        def attend(q, k, v):
            return F.softmax(q @ k.transpose(-2, -1), dim=-1, dtype=torch.float32) @ v


        def drop(x):
            return F.dropout(x, 0.1)
    """)
    right = write(tmp_path, "right.py", """\
        import torch.nn.functional as F


        def attention(q, k, v):
            return F.softmax(q @ k.transpose(-2, -1), dim=-1) @ v


        def dropout(x):
            return F.dropout(x, 0.1)
    """)
    assert pair_by_position(read_model(str(left)), read_model(str(right))) == {
        "attention": "attend", "dropout": "drop"}
    row = rows(left, right)["attention-upcast"]
    assert "in attention, paired with attend by position" in row.message
