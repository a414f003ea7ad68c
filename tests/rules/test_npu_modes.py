"""The Ascend numerics-mode rules (ACL606-609) on the forms real code uses, across files, and on bad input."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

from acclint.config import Config
from acclint.linter.engine import scan
from acclint.rules import npu_modes

RULES = npu_modes.RULES


def project(tmp_path: Path, files: dict) -> Path:
    for name, text in files.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(dedent(text).lstrip("\n"), encoding="utf-8")
    return tmp_path


def run(paths, cwd: Path):
    # The rules' own severities: these projects are settings and helpers, not training programs, so a
    # default run would make them advice (their premises are tested in tests/linter/test_premises.py).
    return scan([Path(p) for p in paths], RULES, Config(preview=True), jobs=1, cwd=cwd)


def found(result) -> list:
    return sorted((f.rule, f.path, f.line, f.severity) for f in result.findings)


TRAIN = """
    import os
    import torch
    import torch_npu

    os.environ["INF_NAN_MODE_ENABLE"] = "0"


    def main():
        model = torch.nn.Linear(2, 2).npu()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.ones(2).npu()).sum().backward()
        opt.step()


    if __name__ == "__main__":
        main()
"""


def test_saturation_in_python_is_an_error_when_the_launch_script_sets_strict(tmp_path):
    root = project(tmp_path, {"train.py": TRAIN, "run.sh": """
        #!/bin/bash
        export HCCL_DETERMINISTIC=strict
        torchrun --nproc_per_node 8 train.py
    """})
    together = [f for f in found(run([root], root)) if f[0] == "ACL609"]
    assert together == [("ACL609", "train.py", 5, "error")]
    # Given alone, the program (with the launch script beside it) is still read: still an error.
    alone = [f for f in found(run([root / "train.py"], root)) if f[0] == "ACL609"]
    assert alone == [("ACL609", "train.py", 5, "error")]


def test_saturation_without_strict_is_a_warning(tmp_path):
    root = project(tmp_path, {"train.py": TRAIN})
    assert [f for f in found(run([root], root)) if f[0] == "ACL609"] == [("ACL609", "train.py", 5, "warning")]


def test_launch_script_alone_with_both_is_an_error(tmp_path):
    root = project(tmp_path, {"run.sh": """
        #!/bin/bash
        export MS_ASCEND_CHECK_OVERFLOW_MODE="SATURATION_MODE"
        export HCCL_DETERMINISTIC=strict
        msrun --worker_num 8 train_ms.py
    """})
    assert found(run([root / "run.sh"], root)) == [("ACL609", "run.sh", 2, "error")]


def test_conditional_options_dict_reports_the_lowering_branch_once(tmp_path):
    # Ascend's Faster_Mask_RCNN: the default lowers, an environment switch keeps float32.
    root = project(tmp_path, {"tools/train_net.py": """
        import os
        import torch_npu


        def main():
            option = {'ACL_PRECISION_MODE': 'allow_fp32_to_fp16'}
            if os.getenv('ALLOW_HF32', False):
                option = {'ACL_PRECISION_MODE': 'must_keep_origin_dtype'}
            option['NPU_FUZZY_COMPILE_BLACKLIST'] = 'LogSoftmaxV2'
            torch_npu.npu.set_option(option)
    """})
    result = run([root], root)
    assert found(result) == [("ACL606", "tools/train_net.py", 10, "warning")]
    assert "float16" in result.findings[0].message and "23" in result.findings[0].message


def test_aliases_and_module_constants_fire_in_a_helper_given_alone(tmp_path):
    root = project(tmp_path, {"npu_setup.py": """
        import torch_npu as tn
        from torch_npu.npu import set_option as apply

        OPTIONS = {"ACL_PRECISION_MODE": "allow_fp32_to_fp16", "ACL_OP_SELECT_IMPL_MODE": "high_performance"}


        def configure():
            tn.npu.set_option(OPTIONS)
            apply({"ACL_PRECISION_MODE_V2": "mixed_bfloat16"})
    """})
    assert found(run([root / "npu_setup.py"], root)) == [
        ("ACL606", "npu_setup.py", 8, "warning"), ("ACL606", "npu_setup.py", 9, "warning"),
        ("ACL608", "npu_setup.py", 8, "warning")]


def test_run_time_options_and_kwargs_give_nothing_and_no_error(tmp_path):
    root = project(tmp_path, {"cfg.py": """
        import json
        import torch
        import torch_npu


        def configure(path, mode, **kwargs):
            torch.npu.set_option(**kwargs)
            torch.npu.set_option(json.load(open(path)))
            torch.npu.set_option({k: v for k, v in kwargs.items()})
            option = dict(ACL_PRECISION_MODE=mode)
            torch.npu.set_option(option)
            torch.npu.set_option({"ACL_PRECISION_MODE": mode})
            torch.npu.set_option()
            torch.npu.set_option("ACL_PRECISION_MODE")
    """})
    result = run([root], root)
    assert result.errors == [] and found(result) == []


def test_precision_mode_unset_once_per_program_and_quiet_with_flags(tmp_path):
    root = project(tmp_path, {"train.py": TRAIN.replace('os.environ["INF_NAN_MODE_ENABLE"] = "0"', "")})
    assert [f for f in found(run([root], root)) if f[0] == "ACL607"] == [("ACL607", "train.py", 15, "info")]
    project(tmp_path, {"run.sh": """
        #!/bin/bash
        python train.py --fp16
    """})
    assert [f for f in found(run([root], root)) if f[0] == "ACL607"] == []


def test_precision_mode_set_in_an_imported_module_counts(tmp_path):
    root = project(tmp_path, {
        "train.py": TRAIN.replace('os.environ["INF_NAN_MODE_ENABLE"] = "0"', "import npu_setup"),
        "npu_setup.py": """
            import torch
            import torch_npu

            option = {}
            option["ACL_PRECISION_MODE"] = "must_keep_origin_dtype"
            torch.npu.set_option(option)
        """})
    assert [f for f in found(run([root / "train.py"], root)) if f[0] == "ACL607"] == []


def test_yaml_configs(tmp_path):
    root = project(tmp_path, {
        "configs/a.yaml": """
            context:
              ascend_config:
                precision_mode: "force_fp16"
        """,
        "configs/not_a_context.yaml": """
            model:
              precision_mode: "fp16"
        """,
        "data/labels.yaml": """
            names: [cat, dog]
        """,
        "configs/broken.yaml": """
            context:
              precision_mode: [force_fp16
        """,
    })
    result = run([root], root)
    assert found(result) == [("ACL606", "configs/a.yaml", 3, "warning")]
    assert [(e.path, e.message.split(":")[0]) for e in result.errors] == [("configs/broken.yaml", "invalid YAML at line 3")]
    assert result.files_scanned == 1  # YAML without Ascend modes is not a config acclint reads


def test_yaml_implementation_mode_under_ge_options(tmp_path):
    root = project(tmp_path, {"configs/run.yaml": """
        context:
          ascend_config:
            ge_options:
              global:
                ge.opSelectImplmode: "high_performance"
    """})
    assert found(run([root], root)) == [("ACL608", "configs/run.yaml", 5, "warning")]
