"""Diffs of Python scripts (PyTorch vs MindSpore, schedulers, fused calls) and of config files."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest
from setup_helpers import FIXTURES, by_key, line_of, run_diff

from acclint.setups import extract


def write(tmp_path: Path, name: str, code: str) -> Path:
    path = tmp_path / name
    path.write_text(dedent(code), encoding="utf-8")
    return path


# ---------------------------------------------------------------- PyTorch vs MindSpore


@pytest.fixture(scope="module")
def torch_ms():
    return run_diff(FIXTURES / "torch_train.py", FIXTURES / "ms_train.py")


def test_torch_vs_mindspore_finds_beta2_bias_correction_and_reduction(torch_ms):
    assert set(by_key(torch_ms)) == {"adam-beta2", "optimizer", "loss-reduction"}


def test_adamweightdecay_is_a_semantic_difference(torch_ms):
    optimizer = by_key(torch_ms)["optimizer"]
    assert optimizer.category == "framework-default"
    assert optimizer.left.value == optimizer.right.value == "adamw"
    assert "no bias correction" in optimizer.message and "mindspore.mint.optim.AdamW" in optimizer.message
    assert optimizer.right.where.line == line_of(FIXTURES / "ms_train.py", "nn.AdamWeightDecay(")


def test_betas_tuple_maps_to_beta2_and_the_missing_beta2_is_the_constructor_default(torch_ms):
    beta2 = by_key(torch_ms)["adam-beta2"]
    assert beta2.left.value == 0.95 and beta2.left.where.line == line_of(FIXTURES / "torch_train.py", "betas=(0.9, 0.95)")
    assert beta2.right.value == 0.999 and beta2.right.origin == "default"
    assert "mindspore.nn.AdamWeightDecay default beta2" in beta2.message


def test_mapped_arguments_that_agree_are_the_same(torch_ms):
    # lr through args.lr / args.learning_rate; keep_prob=0.9 is p=0.1; WEIGHT_DECAY constant;
    # betas[0] = beta1; seeds; clip_grad_norm_ 1.0 = clip_by_global_norm 1.0; batch sizes.
    for key in ("lr", "dropout", "weight-decay", "adam-beta1", "adam-eps", "seed", "clip-grad", "micro-batch-size"):
        assert key in torch_ms.same, key


def test_sgd_momentum_equals_mindspore_momentum():
    result = run_diff(FIXTURES / "torch_sgd.py", FIXTURES / "ms_momentum.py")
    assert result.mismatches == []
    assert {"optimizer", "lr", "momentum", "weight-decay", "nesterov"} <= set(result.same)


def test_mindspore_momentum_with_another_momentum_is_found(tmp_path: Path):
    ms = write(tmp_path, "ms.py", """\
        from mindspore import nn
        net = nn.Dense(8, 2)
        opt = nn.Momentum(net.trainable_params(), 0.1, 0.8, weight_decay=1e-4)
    """)
    mismatch = by_key(run_diff(FIXTURES / "torch_sgd.py", ms))["momentum"]
    assert (mismatch.left.value, mismatch.right.value) == (0.9, 0.8)  # positional arguments mapped
    assert mismatch.right.where.line == 3


# ---------------------------------------------------------------- schedulers


def test_two_schedulers_differ_with_their_parameters_named():
    result = run_diff(FIXTURES / "sched_cosine.py", FIXTURES / "sched_step.py")
    assert set(by_key(result)) == {"lr-scheduler"}
    message = by_key(result)["lr-scheduler"].message
    assert "CosineAnnealingLR(T_max=100, eta_min=1e-05)" in message and "StepLR(step_size=30, gamma=0.5)" in message
    assert "lr-step-size" in result.only_right and "min-lr" in result.only_left


def test_same_scheduler_with_another_floor(tmp_path: Path):
    other = write(tmp_path, "s.py", (FIXTURES / "sched_cosine.py").read_text().replace("eta_min=1e-5", "eta_min=0.0"))
    result = run_diff(FIXTURES / "sched_cosine.py", other)
    assert set(by_key(result)) == {"min-lr"}
    assert by_key(result)["min-lr"].right.value == 0.0


def test_torch_cosine_vs_mindspore_cosine_decay(tmp_path: Path):
    ms = write(tmp_path, "ms.py", """\
        from mindspore import nn
        net = nn.Dense(8, 2)
        schedule = nn.CosineDecayLR(min_lr=1e-5, max_lr=1e-3, decay_steps=200)
        opt = nn.AdamWeightDecay(net.trainable_params(), learning_rate=schedule)
    """)
    result = run_diff(FIXTURES / "sched_cosine.py", ms)
    mismatches = by_key(result)
    assert "lr-scheduler" in result.same and "min-lr" in result.same
    assert (mismatches["lr-decay-steps"].left.value, mismatches["lr-decay-steps"].right.value) == (100, 200)


# ---------------------------------------------------------------- fused ops, determinism


def test_fused_call_on_one_side_points_at_the_composed_form():
    result = run_diff(FIXTURES / "model_gpu.py", FIXTURES / "model_npu.py")
    fused = by_key(result)["npu_swiglu"]
    assert fused.category == "fused-op"
    assert fused.right.where.line == line_of(FIXTURES / "model_npu.py", "torch_npu.npu_swiglu")
    assert fused.left.where.line == line_of(FIXTURES / "model_gpu.py", "F.silu(a) * b")
    assert "fused kernel" in fused.message
    determinism = by_key(result)["deterministic"]
    assert determinism.category == "determinism" and determinism.left.value is True


def test_same_model_twice_is_quiet():
    result = run_diff(FIXTURES / "model_npu.py", FIXTURES / "model_npu.py")
    assert result.mismatches == [] and result.same == ["npu_swiglu"]


def test_mindspore_determinism_matches_torch(tmp_path: Path):
    ms = write(tmp_path, "ms.py", """\
        import mindspore
        mindspore.set_context(deterministic="ON")
    """)
    torch_side = write(tmp_path, "pt.py", """\
        import torch
        torch.use_deterministic_algorithms(True)
    """)
    assert run_diff(torch_side, ms).same == ["deterministic"]


def test_precision_settings_from_set_option_and_exports(tmp_path: Path):
    npu = write(tmp_path, "npu.py", """\
        import torch_npu
        torch_npu.npu.set_option({"ACL_PRECISION_MODE": "allow_fp32_to_fp16", "ACL_OP_SELECT_IMPL_MODE": "high_precision"})
    """)
    other = write(tmp_path, "other.py", """\
        import os
        os.environ["ACL_PRECISION_MODE"] = "must_keep_origin_dtype"
    """)
    result = run_diff(other, npu)
    mode = by_key(result)["precision-mode"]
    assert mode.category == "mixed-precision"
    assert (mode.left.value, mode.right.value) == ("must_keep_origin_dtype", "allow_fp32_to_fp16")
    assert "op-select-impl-mode" in by_key(result)


# ---------------------------------------------------------------- configs


def test_hf_json_vs_mindformers_yaml_compare_on_shared_keys():
    result = run_diff(FIXTURES / "hf_args.json", FIXTURES / "mindformers.yaml")
    assert set(by_key(result)) == {"adam-beta2"}
    beta2 = by_key(result)["adam-beta2"]
    assert beta2.left.where.line == line_of(FIXTURES / "hf_args.json", '"adam_beta2"')
    assert beta2.right.where.line == line_of(FIXTURES / "mindformers.yaml", "betas:")
    # learning_rate, warmup_ratio, max_steps/total_steps, batch sizes, seed, cosine names agree.
    for key in ("lr", "lr-warmup-fraction", "train-iters", "micro-batch-size", "seed", "lr-scheduler", "weight-decay"):
        assert key in result.same, key
    assert "output-dir" in result.ignored


def test_deepspeed_json_flattens_betas_and_loss_scale_power():
    setup = extract(str(FIXTURES / "deepspeed.json"))
    settings = setup.settings
    assert (settings["adam-beta1"].value, settings["adam-beta2"].value) == (0.9, 0.95)
    assert settings["initial-loss-scale"].value == 65536.0
    assert settings["micro-batch-size"].value == 8 and settings["clip-grad"].value == 1.0
    assert settings["optimizer"].value == "AdamW"
    assert settings["lr"].where.line == line_of(FIXTURES / "deepspeed.json", '"lr"')


def test_toml_config(tmp_path: Path):
    left = write(tmp_path, "a.toml", """\
        [optimizer]
        lr = 1e-4
        weight_decay = 0.1
    """)
    right = write(tmp_path, "b.toml", """\
        [optimizer]
        lr = 1e-4
        weight_decay = 0.0
    """)
    result = run_diff(left, right)
    assert set(by_key(result)) == {"weight-decay"} and by_key(result)["weight-decay"].right.where.line == 3
    assert "lr" in result.same


def test_autocast_dtypes_and_seeds_across_frameworks(tmp_path: Path):
    gpu = write(tmp_path, "gpu.py", """\
        import random
        import numpy as np
        import torch
        random.seed(1)
        np.random.seed(1)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            pass
    """)
    npu = write(tmp_path, "npu.py", """\
        import numpy as np
        import torch
        import torch_npu
        np.random.seed(2)
        with torch.npu.amp.autocast():
            pass
    """)
    mismatches = by_key(run_diff(gpu, npu))
    assert (mismatches["autocast-dtype"].left.value, mismatches["autocast-dtype"].right.value) == ("bfloat16", "float16")
    assert mismatches["autocast-dtype"].category == "mixed-precision"
    assert mismatches["seed"].right.value == 2 and mismatches["seed"].right.where.line == 4


def test_mindspore_precision_mode_against_torch_npu(tmp_path: Path):
    torch_npu_side = write(tmp_path, "pt.py", """\
        import torch_npu
        torch_npu.npu.set_option({"ACL_PRECISION_MODE": "must_keep_origin_dtype"})
    """)
    context = write(tmp_path, "ms_context.py", """\
        import mindspore as ms
        ms.set_context(ascend_config={"precision_mode": "allow_fp32_to_fp16"})
    """)
    device_context = write(tmp_path, "ms_device.py", """\
        from mindspore.device_context.ascend.op_precision import precision_mode
        precision_mode("must_keep_origin_dtype")
    """)
    mismatch = by_key(run_diff(torch_npu_side, context))["precision-mode"]
    assert mismatch.right.value == "allow_fp32_to_fp16" and mismatch.right.where.line == 2
    assert run_diff(torch_npu_side, device_context).same == ["precision-mode"]


def test_param_groups_weight_decay(tmp_path: Path):
    torch_side = write(tmp_path, "pt.py", """\
        import torch
        model = torch.nn.Linear(2, 2)
        groups = [
            {"params": [model.weight], "weight_decay": 0.1},
            {"params": [model.bias], "weight_decay": 0.0},
        ]
        opt = torch.optim.AdamW(groups, lr=1e-3)
    """)
    ms_side = write(tmp_path, "ms.py", """\
        from mindspore import nn
        net = nn.Dense(2, 2)
        opt = nn.AdamWeightDecay([{"params": net.weight}, {"params": net.bias}], learning_rate=1e-3,
                                 weight_decay=0.1)
    """)
    setting = extract(str(torch_side)).settings["weight-decay"]
    assert setting.value == (0.1, 0.0) and setting.where.line == 7
    mismatch = by_key(run_diff(torch_side, ms_side))["weight-decay"]
    assert mismatch.right.value == 0.1  # no group overrides it: the optimizer's own value
    assert "param groups: weight_decay=0.1, 0.0" in mismatch.message


def test_ascend_modes_from_key_writes_aliases_and_exports_with_equivalent_values(tmp_path: Path):
    npu = write(tmp_path, "npu.py", """\
        import os
        import torch_npu
        from torch_npu.npu import set_option

        OPTIONS = {"ACL_PRECISION_MODE_V2": "origin"}
        os.environ["MS_ASCEND_CHECK_OVERFLOW_MODE"] = "SATURATION_MODE"


        def main():
            option = {}
            option["ACL_OP_SELECT_IMPL_MODE"] = "high_performance"
            set_option(option)
            set_option(OPTIONS)
    """)
    launch = write(tmp_path, "run_other.sh", """\
        export INF_NAN_MODE_ENABLE=0
        export ACL_PRECISION_MODE=must_keep_origin_dtype
        export ACL_OP_SELECT_IMPL_MODE=high_precision
        python other.py
    """)
    result = run_diff(npu, launch)
    # origin is ACL_PRECISION_MODE_V2's name for must_keep_origin_dtype; SATURATION_MODE is INF_NAN_MODE_ENABLE=0.
    assert "precision-mode" in result.same and "inf-nan-mode" in result.same
    impl = by_key(result)["op-select-impl-mode"]
    assert (impl.left.value, impl.right.value) == ("high_performance", "high_precision")
    assert impl.left.where.line == line_of(npu, 'option["ACL_OP_SELECT_IMPL_MODE"]')
