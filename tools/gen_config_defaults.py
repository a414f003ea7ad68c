#!/usr/bin/env python3
"""Regenerate src/acclint/knowledge/config_defaults.toml from the installed DeepSpeed and accelerate.

`acclint diff` resolves a key one DeepSpeed JSON (or accelerate YAML) leaves out to the default the
library gives it, as it does for Megatron's flags (tools/gen_launcher_defaults.py). Read here:

- DeepSpeed: the pydantic config models of its sections (`bf16`, `fp16`, `zero_optimization` and
  the models nested in them: `DeepSpeedConfigModel` subclasses under deepspeed/runtime/), and the
  top-level keys `deepspeed/runtime/config.py` reads with `get_scalar_param(param_dict, KEY, DEFAULT)`
  or from a section dict with `section.get(KEY, DEFAULT)` (`data_types.grad_accum_dtype`), their
  values taken from `deepspeed/runtime/constants.py`.
- accelerate: the `accelerate launch` parser (`launch_command_parser()`), whose defaults apply to a
  key the config file does not write: its DeepSpeed and FSDP argument groups are the file's
  `deepspeed_config` and `fsdp_config` sections, the other arguments its top-level keys.

DeepSpeed is heavy and not a dependency of acclint: install it in a virtual environment and run this
script with that environment's Python, from the repository root:

    python -m venv --system-site-packages /tmp/venv-ds
    DS_BUILD_OPS=0 /tmp/venv-ds/bin/pip install deepspeed accelerate
    /tmp/venv-ds/bin/python tools/gen_config_defaults.py -o src/acclint/knowledge/config_defaults.toml
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import inspect
import json
import math
import re
import sys
from pathlib import Path

# Sections of a DeepSpeed config read into one pydantic model each (deepspeed/runtime/config.py:
# get_bfloat16_config, get_float16_config, get_zero_config).
DEEPSPEED_SECTIONS = {
    "bf16": "deepspeed.runtime.precision_config.DeepSpeedBF16Config",
    "fp16": "deepspeed.runtime.precision_config.DeepSpeedFP16Config",
    "zero_optimization": "deepspeed.runtime.zero.config.DeepSpeedZeroConfig",
}
# accelerate launch's argument groups that are sections of its config file (accelerate config
# writes `deepspeed_config:` and `fsdp_config:` from them).
ACCELERATE_GROUPS = {"DeepSpeed Arguments": "deepspeed_config", "FSDP Arguments": "fsdp_config"}
# Arguments of `accelerate launch` that are not settings of the run (where and how to launch).
ACCELERATE_SKIP = {"help", "config_file", "training_script", "training_script_args", "quiet", "debug", "module",
                   "no_python", "main_process_ip", "main_process_port", "machine_rank", "num_machines",
                   "num_processes", "gpu_ids", "same_network", "rdzv_backend", "rdzv_conf", "max_restarts",
                   "monitor_interval", "tee", "log_dir", "role", "tpu_name", "tpu_zone", "tpu_use_cluster",
                   "tpu_use_sudo", "vm", "env", "commands", "command_file", "install_accelerate",
                   "deepspeed_hostfile", "deepspeed_exclusion_filter", "deepspeed_inclusion_filter",
                   "deepspeed_multinode_launcher", "deepspeed_config_file", "aws_access_key_id",
                   "aws_secret_access_key", "main_training_function", "num_cpu_threads_per_process"}


def _plain(value):
    """A default as TOML can hold it (pydantic's pretty ints are ints; enums their value); None = not set."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return value
    enum_value = getattr(value, "value", None)
    if isinstance(enum_value, (str, int, float, bool)):
        return enum_value
    return None


def _pydantic_keys(model, prefix: str, where: str, out: dict) -> None:
    from pydantic import BaseModel

    for name, info in model.model_fields.items():
        if (info.json_schema_extra or {}).get("deprecated"):
            continue
        key = f"{prefix}.{info.alias or name}"
        annotation = info.annotation
        nested = [a for a in getattr(annotation, "__args__", (annotation,))
                  if inspect.isclass(a) and issubclass(a, BaseModel)]
        if nested and info.default is None:
            _pydantic_keys(nested[0], key, where, out)  # a sub-section: its own keys, when written
            continue
        default = info.default
        if default.__class__.__name__ == "PydanticUndefinedType":
            continue
        out[key] = {"default": _plain(default), "file": where}


def _module_constants(module) -> dict:
    return {name: value for name, value in vars(module).items() if name.isupper()}


def _config_scalars(config_module, constants: dict) -> dict:
    """Top-level and section keys deepspeed/runtime/config.py reads with a literal default."""
    path = Path(inspect.getfile(config_module))
    tree = ast.parse(path.read_text())
    sections = _section_names(tree, constants)
    out: dict = {}
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        params = _param_defaults(function)
        for call in (n for n in ast.walk(function) if isinstance(n, ast.Call)):
            found = _scalar_read(call, params, constants, sections)
            if found is not None:
                key, default = found
                out.setdefault(key, {"default": _plain(default), "file": f"deepspeed/runtime/config.py:{call.lineno}"})
    return out


def _param_defaults(function: ast.FunctionDef) -> dict:
    """`def f(param_dict, comm_type=COMMUNICATION_DATA_TYPE)`: parameter -> the constant it defaults to."""
    positional = function.args.args[len(function.args.args) - len(function.args.defaults):]
    return {a.arg: d.id for a, d in zip(positional, function.args.defaults) if isinstance(d, ast.Name)}


def _section_names(tree: ast.Module, constants: dict) -> dict:
    """Functions returning `param_dict.get(SECTION, ...)` and locals assigned from one -> SECTION."""
    getters = {}
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        for ret in (n for n in ast.walk(function) if isinstance(n, ast.Return)):
            section = _dict_get(ret.value, constants)
            if section:
                getters[function.name] = section
    names = {}
    for assign in (n for n in ast.walk(tree) if isinstance(n, ast.Assign) and len(n.targets) == 1):
        target, value = assign.targets[0], assign.value
        if not isinstance(target, ast.Name) or not isinstance(value, ast.Call):
            continue
        section = _dict_get(value, constants)
        if section is None and isinstance(value.func, ast.Name):
            section = getters.get(value.func.id)
        if section:
            names[target.id] = section
    return names


def _dict_get(node, constants: dict):
    """`param_dict.get(CONSTANT, ...)` -> the constant's string."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "param_dict" and node.args
            and isinstance(node.args[0], ast.Name)):
        value = constants.get(node.args[0].id)
        return value if isinstance(value, str) else None
    return None


def _scalar_read(call: ast.Call, params: dict, constants: dict, sections: dict):
    """(key, default) of `get_scalar_param(param_dict, KEY, DEFAULT)` or `section.get(KEY, DEFAULT)`."""
    func = call.func
    if isinstance(func, ast.Name) and func.id == "get_scalar_param" and len(call.args) == 3:
        source, key, default = call.args
        if not (isinstance(source, ast.Name) and source.id == "param_dict"):
            return None
        prefix = ""
    elif (isinstance(func, ast.Attribute) and func.attr == "get" and isinstance(func.value, ast.Name)
          and func.value.id in sections and len(call.args) == 2):
        key, default = call.args
        prefix = sections[func.value.id] + "."
    else:
        return None
    if not (isinstance(key, ast.Name) and isinstance(default, ast.Name)):
        return None
    key_name = constants.get(params.get(key.id, key.id))
    default_name = params.get(default.id, default.id)
    if not isinstance(key_name, str) or default_name not in constants:
        return None
    return prefix + key_name, constants[default_name]


def deepspeed_table() -> tuple:
    import deepspeed
    from deepspeed.runtime import config as config_module
    from deepspeed.runtime import constants as constants_module

    constants = _module_constants(constants_module)
    out = _config_scalars(config_module, constants)
    for section, dotted in DEEPSPEED_SECTIONS.items():
        module_name, class_name = dotted.rsplit(".", 1)
        module = importlib.import_module(module_name)
        where = module_name.replace(".", "/") + ".py:" + str(inspect.getsourcelines(getattr(module, class_name))[1])
        _pydantic_keys(getattr(module, class_name), section, where, out)
    # The keys a file of this library may hold at its top level: every key spelled in constants.py.
    top = {value for value in constants.values() if isinstance(value, str) and re.fullmatch(r"[a-z][a-z0-9_]*", value)}
    return deepspeed.__version__, out, top


def accelerate_table() -> tuple:
    import accelerate
    from accelerate.commands.config.config_args import ClusterConfig
    from accelerate.commands.launch import launch_command_parser

    parser = launch_command_parser()
    out: dict = {}
    for group in parser._action_groups:
        section = ACCELERATE_GROUPS.get(group.title or "")
        for action in group._group_actions:
            if action.dest in ACCELERATE_SKIP or action.dest == argparse.SUPPRESS:
                continue
            key = f"{section}.{action.dest}" if section else action.dest
            out.setdefault(key, {"default": _plain(action.default), "file": "accelerate/commands/launch.py"})
    # The keys `accelerate config` writes at a file's top level: the fields of its config classes.
    top = {f.name for f in dataclasses.fields(ClusterConfig)}
    return accelerate.__version__, out, top


def render(tables: dict) -> str:
    lines = [
        "# Defaults of DeepSpeed and accelerate config keys, generated by tools/gen_config_defaults.py from the",
        "# installed libraries' own config schema (DeepSpeed's pydantic config models and the scalar reads of",
        "# deepspeed/runtime/config.py; accelerate's `accelerate launch` parser). Do not edit by hand: regenerate.",
        "# A key without `default` defaults to None (not set: the library decides from other keys).",
        "# Keys are the config file's dotted paths, as written in the JSON/YAML.",
        "",
    ]
    for library, (version, keys, top) in tables.items():
        lines += [f"[sources.{library}]", f'version = "{version}"', f"keys = {len(keys)}",
                  "# Keys a file of this library holds at its top level (how a config file is recognised).",
                  f"top_level = {json.dumps(sorted(top | {k.split('.')[0] for k in keys}))}", ""]
    for library, (_, keys, _top) in tables.items():
        lines.append(f"[{library}]")
        for key in sorted(keys):
            record = keys[key]
            parts = [f"default = {_toml(record['default'])}"] if record["default"] is not None else []
            parts.append(f"file = {json.dumps(record['file'])}")
            lines.append(f"{json.dumps(key)} = {{ {', '.join(parts)} }}")
        lines.append("")
    return "\n".join(lines)


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    args.output.write_text(render({"deepspeed": deepspeed_table(), "accelerate": accelerate_table()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
