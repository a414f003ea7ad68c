"""`acclint diff` on gradient-accumulation fusion (quick rule seed 8): one side passes
`--no-gradient-accumulation-fusion`, the other leaves the fusion on (MindSpeed: npu_matmul_add_fp32).
A single launch script cannot show this (both settings are fine alone), so only the diff reports it."""

from __future__ import annotations

import json
from textwrap import dedent

import pytest
from click.testing import CliRunner
from setup_helpers import by_key, line_of, run_diff

from acclint.cli import main

GPU_UNFUSED = dedent("""\
    #!/bin/bash
    GPT_ARGS=(
        --num-layers 24 --hidden-size 2048 --seq-length 4096 --bf16
        --no-gradient-accumulation-fusion
        --lr 1e-4
    )
    torchrun --nproc_per_node 8 pretrain_gpt.py "${GPT_ARGS[@]}"
""")
NPU_FUSED = dedent("""\
    #!/bin/bash
    source /usr/local/Ascend/ascend-toolkit/set_env.sh
    GPT_ARGS="
        --num-layers 24 --hidden-size 2048 --seq-length 4096 --bf16
        --use-flash-attn
        --lr 1e-4
    "
    torchrun --nproc_per_node 8 pretrain_gpt.py $GPT_ARGS
""")


@pytest.fixture()
def scripts(tmp_path):
    gpu, npu = tmp_path / "gpu.sh", tmp_path / "npu.sh"
    gpu.write_text(GPU_UNFUSED, encoding="utf-8")
    npu.write_text(NPU_FUSED, encoding="utf-8")
    return gpu, npu


def test_removed_flag_is_a_fused_op_mismatch_naming_npu_matmul_add(scripts):
    gpu, npu = scripts
    mismatch = by_key(run_diff(gpu, npu))["no-gradient-accumulation-fusion"]
    assert mismatch.category == "fused-op"
    assert mismatch.left.value is True and mismatch.left.where.line == line_of(gpu, "--no-gradient-accumulation")
    assert mismatch.right.value is False and mismatch.right.origin == "default"
    assert "npu_matmul_add_fp32" in mismatch.message and "rounded to bf16" in mismatch.message
    assert "Add --no-gradient-accumulation-fusion on the right" in mismatch.message


def test_flag_only_on_the_npu_side_is_reported_too(scripts):
    gpu, npu = scripts
    mismatch = by_key(run_diff(npu, gpu))["no-gradient-accumulation-fusion"]
    assert (mismatch.left.value, mismatch.right.value) == (False, True)
    assert "wgrad_gemm_accum_fp32" in mismatch.message  # what the fused side computes on a GPU


def test_same_setting_on_both_sides_is_not_a_mismatch(tmp_path):
    gpu, npu = tmp_path / "gpu.sh", tmp_path / "npu.sh"
    gpu.write_text(GPU_UNFUSED, encoding="utf-8")
    npu.write_text(NPU_FUSED.replace("--use-flash-attn", "--use-flash-attn --no-gradient-accumulation-fusion"),
                   encoding="utf-8")
    result = run_diff(gpu, npu)
    assert "no-gradient-accumulation-fusion" not in by_key(result)
    assert "no-gradient-accumulation-fusion" in result.same


def test_json_and_github_carry_it_as_a_warning(scripts):
    gpu, npu = scripts
    report = json.loads(CliRunner().invoke(main, ["diff", str(gpu), str(npu), "--format", "json"]).output)
    entry = next(m for m in report["mismatches"] if m["key"] == "no-gradient-accumulation-fusion")
    assert entry["category"] == "fused-op" and (entry["left"], entry["right"]) == (True, False)
    assert entry["left_location"]["line"] == line_of(gpu, "--no-gradient-accumulation") and entry["right_location"] is None
    github = CliRunner().invoke(main, ["diff", str(gpu), str(npu), "--format", "github"]).output
    line = next(text for text in github.splitlines() if "no-gradient-accumulation-fusion" in text)
    assert line.startswith("::warning ") and "npu_matmul_add_fp32" in line
