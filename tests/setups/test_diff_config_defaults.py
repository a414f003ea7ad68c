"""`acclint diff` of DeepSpeed JSON and accelerate YAML configs: a key one side leaves out is compared
against the library's default (knowledge/config_defaults.toml), not listed as set on one side only."""

from __future__ import annotations

import json

from acclint.knowledge import table
from acclint.setups.config_defaults import library_of
from setup_helpers import by_key, line_of, run_diff

DEEPSPEED = table("config_defaults")["sources"]["deepspeed"]["version"]


def _json(path, data: dict):
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def test_a_key_one_deepspeed_config_leaves_out_takes_deepspeeds_default(tmp_path):
    gpu = _json(tmp_path / "ds_gpu.json", {
        "train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": True},
        "data_types": {"grad_accum_dtype": "fp32"}, "zero_optimization": {"stage": 2, "overlap_comm": True},
    })
    npu = _json(tmp_path / "ds_npu.json", {
        "train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2},
        "communication_data_type": "fp32",
    })
    result = run_diff(gpu, npu)
    rows = by_key(result)
    bf16 = rows["bf16"]
    assert bf16.left.value is True and bf16.left.where.line == line_of(gpu, '"enabled"')
    assert bf16.right.value is False and bf16.right.is_default
    assert f"DeepSpeed {DEEPSPEED} default" in bf16.message and bf16.category == "mixed-precision"
    accum = rows["data_types.grad_accum_dtype"]
    assert accum.left.value == "fp32" and accum.right.value is None and accum.category == "mixed-precision"
    assert f"DeepSpeed {DEEPSPEED} default" in accum.message
    comm = rows["communication-data-type"]
    assert comm.left.is_default and comm.right.value == "fp32"
    assert f"Remove it at {npu.name}" in comm.message or f"Remove it at {npu}" in comm.message
    assert rows["zero_optimization.overlap_comm"].right.is_default
    # Nothing these configs write is left as "set on one side only".
    assert not result.only_left and not result.only_right


def test_a_key_written_as_the_default_is_the_same(tmp_path):
    written = _json(tmp_path / "a.json", {"train_micro_batch_size_per_gpu": 4, "fp16": {"enabled": False},
                                          "zero_optimization": {"stage": 0, "reduce_bucket_size": 5e8}})
    absent = _json(tmp_path / "b.json", {"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 0}})
    result = run_diff(written, absent)
    assert not result.mismatches, [m.message for m in result.mismatches]
    assert {"fp16", "zero_optimization.reduce_bucket_size"} <= set(result.same)


def test_gradient_clipping_absent_is_deepspeeds_default_not_off(tmp_path):
    default = table("config_defaults")["deepspeed"]["gradient_clipping"]["default"]
    off = _json(tmp_path / "off.json", {"train_micro_batch_size_per_gpu": 4, "gradient_clipping": 0.0})
    absent = _json(tmp_path / "absent.json", {"train_micro_batch_size_per_gpu": 4})
    row = by_key(run_diff(off, absent))["clip-grad"]
    assert row.left.value == 0.0 and row.right.value == default and row.right.is_default


def test_accelerate_yaml_keys_take_accelerate_launch_defaults(tmp_path):
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nmixed_precision: bf16\n"
                   "num_processes: 8\nfsdp_config:\n  fsdp_sharding_strategy: SHARD_GRAD_OP\n")
    npu = tmp_path / "npu.yaml"
    npu.write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nmixed_precision: bf16\n"
                   "num_processes: 8\n")
    row = by_key(run_diff(gpu, npu))["fsdp_config.fsdp_sharding_strategy"]
    assert row.left.value == "SHARD_GRAD_OP" and row.left.where.line == line_of(gpu, "fsdp_sharding_strategy")
    assert row.right.value == "FULL_SHARD" and row.right.is_default and "accelerate" in row.message


def test_only_a_library_config_is_read_as_one():
    assert library_of(["train_micro_batch_size_per_gpu", "zero_optimization", "bf16"]) == "deepspeed"
    assert library_of(["compute_environment", "distributed_type", "mixed_precision"]) == "accelerate"
    # A HF TrainingArguments JSON shares a few key names with DeepSpeed, not most of them.
    hf_arguments = ["learning_rate", "output_dir", "per_device_train_batch_size", "bf16", "num_train_epochs"]
    assert library_of(hf_arguments) is None


def test_fp16_loss_scaling_keys_left_out_take_deepspeeds_values(tmp_path):
    left = _json(tmp_path / "a.json", {"train_micro_batch_size_per_gpu": 4,
                                       "fp16": {"enabled": True, "loss_scale_window": 500}})
    right = _json(tmp_path / "b.json", {"train_micro_batch_size_per_gpu": 4,
                                        "fp16": {"enabled": True, "initial_scale_power": 12}})
    rows = by_key(run_diff(left, right))
    assert (rows["loss-scale-window"].left.value, rows["loss-scale-window"].right.value) == (500, 1000)
    # initial_scale_power 16 (the default) is a starting scale of 2**16 against 2**12.
    assert (rows["initial-loss-scale"].left.value, rows["initial-loss-scale"].right.value) == (65536.0, 4096.0)
    assert rows["initial-loss-scale"].left.is_default


def test_a_folder_holding_a_deepspeed_config_takes_deepspeeds_defaults(tmp_path):
    (tmp_path / "gpu").mkdir()
    (tmp_path / "npu").mkdir()
    _json(tmp_path / "gpu" / "ds_config.json", {"train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": True},
                                                 "zero_optimization": {"stage": 2}})
    npu = _json(tmp_path / "npu" / "ds_config.json", {"train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": True},
                                                       "zero_optimization": {"stage": 2}, "gradient_clipping": 0.5})
    row = by_key(run_diff(tmp_path / "gpu", tmp_path / "npu"))["clip-grad"]
    # The folder's config leaves gradient_clipping to DeepSpeed, as the file compared alone does.
    assert row.left.is_default and f"DeepSpeed {DEEPSPEED} default" in row.left.written
    assert row.right.value == 0.5 and row.right.where.line == line_of(npu, "gradient_clipping")
