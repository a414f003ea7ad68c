"""`acclint diff` of a PyTorch model file and its MindSpore port reads the documented API differences
(knowledge/api_differences.toml, the table ACL711 reports from) as rows of the diff."""

from __future__ import annotations

import json
import textwrap

from click.testing import CliRunner

from acclint.cli import main

TORCH = """
    import torch
    from torch import nn
    import torch.nn.functional as F


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.act = nn.LeakyReLU()
            self.norm = nn.InstanceNorm2d(8)

        def forward(self, x):
            return F.normalize(self.act(self.norm(x)))
"""

MINDSPORE = """
    from mindspore import nn, ops


    class Block(nn.Cell):
        def __init__(self):
            super().__init__()
            self.act = nn.LeakyReLU({act})
            self.norm = nn.InstanceNorm2d(8{norm})
            self.l2 = ops.L2Normalize()

        def construct(self, x):
            return self.l2(self.act(self.norm(x)))
"""


def _diff(tmp_path, left: str, right: str, *args):
    (tmp_path / "torch_block.py").write_text(textwrap.dedent(left), encoding="utf-8")
    (tmp_path / "ms_block.py").write_text(textwrap.dedent(right), encoding="utf-8")
    return CliRunner().invoke(main, ["diff", str(tmp_path / "torch_block.py"), str(tmp_path / "ms_block.py"), *args])


def test_defaults_that_differ_between_the_port_and_the_original_are_rows_with_both_lines(tmp_path):
    result = _diff(tmp_path, TORCH, MINDSPORE.format(act="", norm=""), "--format", "json")
    assert result.exit_code == 1, result.output
    rows = {m["key"]: m for m in json.loads(result.output)["mismatches"]}
    slope = rows["LeakyReLU.negative_slope"]
    assert slope["category"] == "framework-default"
    assert (slope["left"], slope["right"]) == ("0.01", "0.2")
    assert slope["left_location"]["line"] == 10 and slope["right_location"]["line"] == 8
    affine = rows["InstanceNorm2d.affine"]
    assert (affine["left"], affine["right"]) == ("False", "True")
    assert "LeakyReLU.html" in slope["message"] and "alpha=0.01" in slope["message"]
    assert {"normalize.dim", "normalize.eps"} <= set(rows)  # ops.L2Normalize: axis 0 vs dim 1, 1e-4 vs 1e-12


def test_a_port_that_passes_the_pytorch_values_has_no_row_for_them(tmp_path):
    result = _diff(tmp_path, TORCH, MINDSPORE.format(act="alpha=0.01", norm=", affine=False"), "--format", "json")
    keys = {m["key"] for m in json.loads(result.output)["mismatches"]}
    assert "LeakyReLU.negative_slope" not in keys and "InstanceNorm2d.affine" not in keys


def test_the_mindspore_side_may_be_the_left_one(tmp_path):
    result = _diff(tmp_path, MINDSPORE.format(act="", norm=""), TORCH, "--format", "json")
    rows = {m["key"]: m for m in json.loads(result.output)["mismatches"]}
    assert (rows["LeakyReLU.negative_slope"]["left"], rows["LeakyReLU.negative_slope"]["right"]) == ("0.2", "0.01")


def test_an_unknown_positional_argument_is_not_guessed(tmp_path):
    """`nn.LeakyReLU(slope)` with a variable: the value cannot be read, so no row claims a difference."""
    torch_side = TORCH.replace("nn.LeakyReLU()", "nn.LeakyReLU(slope)")
    result = _diff(tmp_path, torch_side, MINDSPORE.format(act="", norm=""), "--format", "json")
    keys = {m["key"] for m in json.loads(result.output)["mismatches"]}
    assert "LeakyReLU.negative_slope" not in keys and "InstanceNorm2d.affine" in keys
