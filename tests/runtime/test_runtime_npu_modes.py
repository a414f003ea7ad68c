"""The Ascend numerics modes in the step-0 environment: recorded variables, the SoC default of the
precision mode, and an `env` mismatch when float32 matmuls run in 16 bits on one side only. There is
no NPU here, so the NPU side is a real CPU fingerprint whose recorded NPU settings are written in."""

from __future__ import annotations

import json

import pytest

from acclint.runtime import capture, compare, load
from acclint.runtime_checks.adapters.environment import npu_fp32_matmul_16bit, soc_default_precision_mode


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"npu.soc_name": "Ascend910A"}, True),  # Atlas training series: allow_fp32_to_fp16 by default
        ({"npu.soc_name": "Ascend910ProB"}, True),
        ({"npu.soc_name": "Ascend910B3"}, False),  # A2: must_keep_origin_dtype
        ({"npu.soc_name": "Ascend910_9391"}, False),  # A3
        ({"npu.soc_name": "Ascend910B3", "npu.precision_mode": "allow_fp32_to_fp16"}, True),
        ({"npu.soc_name": "Ascend910A", "npu.precision_mode": "must_keep_origin_dtype"}, False),
        ({"npu.precision_mode": "allow_mix_precision_bf16"}, True),
        ({"npu.soc_name": "Ascend310P3"}, None),  # a SoC the table does not know: unknown, not False
        ({}, None),
    ],
)
def test_fp32_matmul_16_bit_from_mode_and_soc(settings, expected):
    assert npu_fp32_matmul_16bit(settings) is expected


def test_soc_default_names_the_family_default():
    assert soc_default_precision_mode("Ascend910A") == "allow_fp32_to_fp16"
    assert soc_default_precision_mode("Ascend910B4") == "must_keep_origin_dtype"
    assert soc_default_precision_mode(None) is None


def test_overflow_and_collective_variables_are_recorded(make_torch, monkeypatch):
    monkeypatch.setenv("INF_NAN_MODE_ENABLE", "0")
    monkeypatch.setenv("LCCL_DETERMINISTIC", "1")
    monkeypatch.setenv("HCCL_ALGO", "level0:NA;level1:ring")
    setup = make_torch()
    variables = capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch).env["variables"]
    assert variables["INF_NAN_MODE_ENABLE"] == "0"
    assert variables["LCCL_DETERMINISTIC"] == "1"
    assert variables["HCCL_ALGO"] == "level0:NA;level1:ring"


def _recorded_as(fp, path, settings: dict, effective: dict):
    data = json.loads(fp.to_json())
    data["env"]["settings"].update(settings)
    data["env"]["effective"].update(effective)
    path.write_text(json.dumps(data), encoding="utf-8")
    return load(path)


def test_910a_default_against_gpu_float32_is_an_env_mismatch(make_torch, tmp_path):
    setup = make_torch()
    fp = capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch)
    gpu_settings = {"float32_matmul_precision": "highest"}
    npu_settings = {"npu.soc_name": "Ascend910A"}  # precision mode never set
    gpu = _recorded_as(fp, tmp_path / "gpu.json", gpu_settings, {"fp32-matmul-16-bit": False})
    npu = _recorded_as(fp, tmp_path / "npu.json", npu_settings,
                       {"fp32-matmul-16-bit": npu_fp32_matmul_16bit(npu_settings)})
    result = compare(gpu, npu)
    assert [(m.kind, m.name, m.left, m.right) for m in result.mismatches] == [("env", "fp32-matmul-16-bit", False, True)]

    a2_settings = {"npu.soc_name": "Ascend910B3"}
    a2 = _recorded_as(fp, tmp_path / "a2.json", a2_settings, {"fp32-matmul-16-bit": npu_fp32_matmul_16bit(a2_settings)})
    assert compare(gpu, a2).ok
