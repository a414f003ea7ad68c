"""Diffs of launch scripts: Megatron (arrays) vs MindSpeed-LLM (a string variable), a control
pair written two ways, absent flags resolved to launcher defaults, units converted."""

from __future__ import annotations

from pathlib import Path

import pytest

from setup_helpers import FIXTURES, by_key, line_of, run_diff

GPU = FIXTURES / "megatron_gpu.sh"
NPU = FIXTURES / "mindspeed_npu.sh"


@pytest.fixture(scope="module")
def gpu_npu():
    return run_diff(GPU, NPU)


def test_every_difference_of_the_recipe_pair_and_nothing_else(gpu_npu):
    assert set(by_key(gpu_npu)) == {
        "hidden-dropout", "global-batch-size", "train-iters", "lr-warmup-iters", "adam-beta2",
        "HCCL_DETERMINISTIC", "use-fused-swiglu",
    }  # fmt: skip
    for key in ("num-layers", "lr", "min-lr", "lr-decay-style", "weight-decay", "clip-grad", "bf16", "swiglu"):
        assert key in gpu_npu.same


def test_lines_point_into_the_array_and_into_the_string_variable(gpu_npu):
    beta2 = by_key(gpu_npu)["adam-beta2"]
    assert (beta2.left.value, beta2.right.value) == (0.95, 0.999)
    assert beta2.left.where.line == line_of(GPU, "--adam-beta2 0.95")
    assert beta2.right.where.line == line_of(NPU, "--adam-beta2 0.999")  # inside GPT_ARGS="..."
    assert beta2.right.where.path.endswith("mindspeed_npu.sh")


def test_absent_flag_takes_the_launcher_default_and_says_so(gpu_npu):
    dropout = by_key(gpu_npu)["hidden-dropout"]
    assert dropout.left.value == 0.0 and dropout.left.where.line == line_of(GPU, "--hidden-dropout 0.0")
    assert dropout.right.value == 0.1 and dropout.right.where is None and dropout.right.origin == "default"
    assert "Megatron-LM core_v0.12.1 default" in dropout.message
    assert "--hidden-dropout 0.0" in dropout.message  # what to do on the right


def test_samples_convert_to_iterations_with_the_global_batch(gpu_npu):
    iters = by_key(gpu_npu)["train-iters"]
    assert iters.left.value == 5000
    assert iters.right.value == 2500 and iters.right.origin == "derived"  # 1280000 / 512
    assert iters.right.where.line == line_of(NPU, "--train-samples")
    assert "1280000 samples / global batch 512" in iters.message


def test_warmup_fraction_converts_to_iterations(gpu_npu):
    warmup = by_key(gpu_npu)["lr-warmup-iters"]
    assert warmup.left.value == pytest.approx(50)  # 0.01 x train-iters 5000
    assert warmup.right.value == 25
    assert "warmup fraction 0.01 x train-iters 5000" in warmup.message


def test_fused_switch_and_determinism_on_one_side_only(gpu_npu):
    mismatches = by_key(gpu_npu)
    fused = mismatches["use-fused-swiglu"]
    assert fused.category == "fused-op"
    assert fused.left.value is False and fused.left.where is None and "Megatron-LM has no such option" in fused.message
    assert fused.right.where.line == line_of(NPU, "--use-fused-swiglu")
    determinism = mismatches["HCCL_DETERMINISTIC"]
    assert determinism.category == "determinism"
    assert determinism.right.where.line == line_of(NPU, "export HCCL_DETERMINISTIC=true")
    assert "set only on the right" in determinism.message


def test_every_mismatch_has_both_locations_or_a_default(gpu_npu):
    for mismatch in gpu_npu.mismatches:
        for side in (mismatch.left, mismatch.right):
            assert side.where is not None or side.origin == "default", mismatch
        assert mismatch.key in mismatch.message


def test_control_pair_written_two_ways_is_the_same():
    result = run_diff(FIXTURES / "same_arrays.sh", FIXTURES / "same_string.sh")
    assert result.mismatches == []
    # samples -> iterations, fraction -> iterations, `--lr=1e-4` vs 0.0001, 9.5e-1, defaults.
    for key in ("train-iters", "lr-warmup-iters", "lr", "adam-beta2", "attention-dropout", "seed"):
        assert key in result.same
    assert "save" in result.ignored


def test_a_difference_in_the_control_pair_is_found(tmp_path: Path):
    changed = tmp_path / "same_string.sh"
    changed.write_text((FIXTURES / "same_string.sh").read_text().replace("--train-samples 256000", "--train-samples 512000"))
    result = run_diff(FIXTURES / "same_arrays.sh", changed)
    assert set(by_key(result)) == {"train-iters"}
    assert by_key(result)["train-iters"].right.value == 2000


def test_inexact_unit_conversion_is_reported_as_different_units(tmp_path: Path):
    left = tmp_path / "a.sh"
    left.write_text("torchrun train.py --global-batch-size 96 --train-samples 1000\n")
    right = tmp_path / "b.sh"
    right.write_text("torchrun train.py --global-batch-size 96 --train-iters 10\n")
    mismatch = by_key(run_diff(left, right))["train-iters"]
    assert not mismatch.left.known
    assert "different units" in mismatch.message and "not a whole number" in mismatch.message


def test_value_from_a_variable_the_script_never_sets(tmp_path: Path):
    left = tmp_path / "a.sh"
    left.write_text("torchrun pretrain_gpt.py --lr $LR --seed 1\n")
    right = tmp_path / "b.sh"
    right.write_text("torchrun pretrain_gpt.py --lr 1e-4 --seed 1\n")
    result = run_diff(left, right)
    assert set(by_key(result)) == {"lr"}
    assert "cannot be read statically" in by_key(result)["lr"].message
    assert "seed" in result.same


@pytest.mark.parametrize("ignore", [["adam-beta2"], ["adam-*"], ["hyperparameter"]])
def test_ignore_by_key_glob_or_category(gpu_npu, ignore):
    result = run_diff(GPU, NPU, ignore=ignore)
    assert "adam-beta2" not in by_key(result) and "adam-beta2" in result.ignored
    assert "use-fused-swiglu" in by_key(result)


def test_ignore_the_parallel_group(tmp_path: Path):
    left = tmp_path / "a.sh"
    left.write_text("torchrun pretrain_gpt.py --tensor-model-parallel-size 8 --sequence-parallel --lr 1e-4\n")
    right = tmp_path / "b.sh"
    right.write_text("torchrun pretrain_gpt.py --tensor-model-parallel-size 4 --lr 1e-4\n")
    assert set(by_key(run_diff(left, right))) == {"tensor-model-parallel-size", "sequence-parallel"}
    assert "--ignore parallel" in by_key(run_diff(left, right))["sequence-parallel"].message
    assert run_diff(left, right, ignore=["parallel"]).mismatches == []


def test_entry_script_argparse_defaults_and_launch_overrides():
    result = run_diff(FIXTURES / "entry" / "gpu.sh", FIXTURES / "entry" / "npu.sh")
    assert set(by_key(result)) == {"dropout", "HCCL_DETERMINISTIC"}
    dropout = by_key(result)["dropout"]
    train = FIXTURES / "entry" / "train.py"
    assert dropout.left.value == 0.1 and dropout.left.where.path.endswith("train.py")
    assert dropout.left.where.line == line_of(train, '"--dropout"')
    assert dropout.right.value == 0.0 and dropout.right.where.path.endswith("npu.sh")
    # lr: the launch's 3e-4 overrides the argparse default 1e-3 on both sides.
    assert "lr" in result.same
    assert "weight-decay" in result.same


def test_precision_and_overflow_exports(tmp_path: Path):
    left = tmp_path / "a.sh"
    left.write_text("export INF_NAN_MODE_ENABLE=1\ntorchrun pretrain_gpt.py --lr 1e-4\n")
    right = tmp_path / "b.sh"
    right.write_text("export INF_NAN_MODE_ENABLE=0\nexport ACL_PRECISION_MODE=allow_fp32_to_fp16\n"
                     "torchrun pretrain_gpt.py --lr 1e-4\n")
    mismatches = by_key(run_diff(left, right))
    assert set(mismatches) == {"inf-nan-mode", "precision-mode"}
    assert (mismatches["inf-nan-mode"].left.value, mismatches["inf-nan-mode"].right.value) == (1, 0)
    assert mismatches["precision-mode"].category == "mixed-precision"
    assert mismatches["precision-mode"].right.where.line == 2


def test_short_options_of_the_entry_script_map_to_its_long_key(tmp_path: Path):
    (tmp_path / "train.py").write_text(
        "import argparse\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('-b', '--batch-size', type=int, default=128)\n"
    )
    left = tmp_path / "a.sh"
    left.write_text("torchrun train.py -b 32\n")
    right = tmp_path / "b.sh"
    right.write_text("torchrun train.py --batch-size 64\n")
    mismatch = by_key(run_diff(left, right))["micro-batch-size"]
    assert (mismatch.left.value, mismatch.right.value) == (32, 64)
    assert mismatch.left.where.path.endswith("a.sh")
