"""What one side's record holds: names resolved through module constants and argparse, the
walker's constant facts, and which launcher's defaults a launch script gets."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

from setup_helpers import FIXTURES

from acclint.setups import extract


def write(tmp_path: Path, name: str, code: str) -> Path:
    path = tmp_path / name
    path.write_text(dedent(code), encoding="utf-8")
    return path


def test_module_constants_resolve_with_their_own_line(tmp_path: Path):
    path = write(tmp_path, "train.py", """\
        import torch
        LR = 3e-4
        BETAS = (0.9, 0.95)
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.AdamW(model.parameters(), LR, BETAS, weight_decay=-0.0)
    """)
    settings = extract(str(path)).settings
    assert settings["lr"].value == 3e-4 and settings["lr"].where.line == 2
    assert settings["adam-beta2"].value == 0.95 and settings["adam-beta2"].where.line == 3
    assert settings["weight-decay"].value == 0.0 and settings["weight-decay"].where.line == 5
    assert settings["adam-eps"].is_default and settings["adam-eps"].value == 1e-8


def test_argparse_dest_and_switches(tmp_path: Path):
    path = write(tmp_path, "train.py", """\
        import argparse
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--base-lr", dest="learning_rate", type=float, default=0.01)
        parser.add_argument("--no-momentum", action="store_true")
        args = parser.parse_args()
        opt = torch.optim.SGD([], lr=args.learning_rate, momentum=0.9, nesterov=True)
    """)
    setup = extract(str(path))
    assert setup.framework == "pytorch"
    assert setup.settings["lr"].value == 0.01 and setup.settings["lr"].where.line == 4
    assert setup.settings["no-momentum"].value is False
    assert setup.settings["optimizer"].value == "sgd-momentum"
    assert setup.settings["nesterov"].value is True


def test_unresolvable_argument_is_kept_as_unknown(tmp_path: Path):
    path = write(tmp_path, "train.py", """\
        import torch
        opt = torch.optim.AdamW([], lr=get_lr())
    """)
    lr = extract(str(path)).settings["lr"]
    assert not lr.known and lr.where.line == 2


def test_launcher_defaults_follow_the_launch_script():
    assert extract(str(FIXTURES / "megatron_gpu.sh")).launcher == "megatron"
    assert extract(str(FIXTURES / "mindspeed_npu.sh")).launcher == "mindspeed"
    assert extract(str(FIXTURES / "same_string.sh")).launcher == "megatron"


def test_msrun_with_an_llm_only_flag_is_mindspeed_llm(tmp_path: Path):
    path = write(tmp_path, "ms.sh", """\
        ARGS="--lr 1e-4 --handler-name GeneralPretrainHandler"
        msrun --worker_num 8 --local_worker_num 8 pretrain_gpt.py $ARGS --ai-framework mindspore
    """)
    setup = extract(str(path))
    assert setup.launcher == "mindspeed-llm"
    assert setup.settings["lr"].where.line == 1
