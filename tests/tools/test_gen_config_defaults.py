"""tools/gen_config_defaults.py: the DeepSpeed and accelerate config defaults `acclint diff` compares with.

DeepSpeed is not installed in the test environment: its config.py reader runs on a small module written
like deepspeed/runtime/config.py; accelerate is installed and read for real."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from textwrap import dedent

from acclint.knowledge import table

REPO = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_config_defaults", REPO / "tools" / "gen_config_defaults.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_top_level_and_section_reads_of_config_py_with_their_constants(tmp_path):
    config = tmp_path / "config.py"
    config.write_text(dedent("""\
        def get_gradient_clipping(param_dict):
            return get_scalar_param(param_dict, GRADIENT_CLIPPING, GRADIENT_CLIPPING_DEFAULT)

        def get_communication_data_type(param_dict, comm_type=COMMUNICATION_DATA_TYPE,
                                        comm_data_type_default=COMMUNICATION_DATA_TYPE_DEFAULT):
            return get_scalar_param(param_dict, comm_type, comm_data_type_default)

        def get_data_types_params(param_dict):
            return param_dict.get(DATA_TYPES, {})

        class DeepSpeedConfig:
            def _initialize(self, param_dict):
                data_types_params = get_data_types_params(param_dict)
                self.grad_accum_dtype = data_types_params.get(GRAD_ACCUM_DTYPE, GRAD_ACCUM_DTYPE_DEFAULT)
                self.torch_autocast = get_scalar_param(param_dict["torch_autocast"], ENABLED, ENABLED_DEFAULT)
    """))
    constants = {"GRADIENT_CLIPPING": "gradient_clipping", "GRADIENT_CLIPPING_DEFAULT": 1.0,
                 "COMMUNICATION_DATA_TYPE": "communication_data_type", "COMMUNICATION_DATA_TYPE_DEFAULT": None,
                 "DATA_TYPES": "data_types", "GRAD_ACCUM_DTYPE": "grad_accum_dtype", "GRAD_ACCUM_DTYPE_DEFAULT": None,
                 "ENABLED": "enabled", "ENABLED_DEFAULT": False}
    generator = _generator()

    module = types.ModuleType("config")  # only its file is read
    module.__file__ = str(config)
    found = generator._config_scalars(module, constants)
    assert found["gradient_clipping"]["default"] == 1.0 and found["gradient_clipping"]["file"].endswith(":2")
    assert found["communication_data_type"]["default"] is None
    assert found["data_types.grad_accum_dtype"]["default"] is None
    assert "enabled" not in found  # read from a section of its own, not the top level


def test_accelerate_sections_come_from_its_launch_parser():
    version, keys, top = _generator().accelerate_table()
    assert keys["fsdp_config.fsdp_sharding_strategy"]["default"] == "FULL_SHARD"
    assert "deepspeed_config.zero_stage" in keys and "mixed_precision" in keys
    assert {"compute_environment", "distributed_type", "deepspeed_config"} <= top
    assert version


def test_the_committed_table_names_its_versions_and_holds_the_keys_diff_needs():
    defaults = table("config_defaults")
    assert defaults["sources"]["deepspeed"]["version"] == "0.19.8"
    deepspeed = defaults["deepspeed"]
    assert deepspeed["bf16.enabled"]["default"] is False and deepspeed["fp16.initial_scale_power"]["default"] == 16
    assert deepspeed["gradient_clipping"]["default"] == 1.0  # deepspeed/runtime/constants.py in 0.19.8
    assert "default" not in deepspeed["data_types.grad_accum_dtype"]  # None: follows the model's dtype
    assert "default" not in deepspeed["communication_data_type"]
    assert deepspeed["zero_optimization.stage"]["default"] == 0
    assert deepspeed["zero_optimization.reduce_bucket_size"]["default"] == 500_000_000
