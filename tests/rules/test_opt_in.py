"""Opt-in switches: what runs only behind a flag that defaults to off is the user's opt-in, not the
default run. Explicit settings there are info; absent ones are reported as opt-in at their line."""

from __future__ import annotations

import json

from click.testing import CliRunner

from acclint.cli import main

OPT_IN_SETTINGS = """\
import argparse

import torch
import torch_npu

parser = argparse.ArgumentParser()
parser.add_argument("--allow_tf32", action="store_true")
parser.add_argument("--benchmark", action="store_true")
parser.add_argument("--fast", default=True)
args = parser.parse_args()
if args.allow_tf32:
    torch.backends.cuda.matmul.allow_tf32 = True
if args.benchmark:
    torch.backends.cudnn.benchmark = True
if args.fast:
    torch.backends.cudnn.benchmark = True
"""


def _findings(tmp_path, *args):
    (tmp_path / "setup_backend.py").write_text(OPT_IN_SETTINGS)
    result = CliRunner().invoke(main, ["scan", str(tmp_path), "--format", "json", "--no-cache", "--preview", *args])
    return {(f["rule"], f["line"]): f for f in json.loads(result.output)["findings"]}


def test_settings_behind_a_flag_off_by_default_are_info_and_say_so(tmp_path):
    found = _findings(tmp_path)
    tf32, benchmark = found[("ACL605", 12)], found[("ACL202", 14)]
    assert tf32["severity"] == benchmark["severity"] == "info"
    assert "runs only when args.benchmark is true, and `--benchmark` defaults to False" in benchmark["message"]


def test_a_flag_on_by_default_is_the_default_run(tmp_path):
    assert _findings(tmp_path)[("ACL202", 16)]["severity"] == "warning"


CONFIG_FIELD_GUARD = """\
from dataclasses import dataclass
from typing import Optional

import torch


@dataclass
class TrainerConfig:
    mixed_precision: Optional[str] = None  # set by the run's YAML config, which this file does not show


class Trainer:
    def __init__(self, config: TrainerConfig, model, optimizer):
        self.config, self.model, self.optimizer = config, model, optimizer
        self.scaler = torch.cuda.amp.GradScaler()

    def step(self, loss):
        if self.config.mixed_precision:
            self.scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.scaler.step(self.optimizer)
            self.scaler.update()
"""


def test_a_config_field_guard_is_not_an_opt_in_its_value_comes_from_config_files(tmp_path):
    (tmp_path / "trainer.py").write_text(CONFIG_FIELD_GUARD)
    result = CliRunner().invoke(main, ["scan", str(tmp_path), "--format", "json", "--no-cache", "--select", "ACL610"])
    findings = json.loads(result.output)["findings"]
    assert [(f["rule"], f["severity"]) for f in findings] == [("ACL610", "warning")]


SEED_BEHIND_FLAG = """\
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=None)


if __name__ == "__main__":
    args = parser.parse_args()
    if args.seed is not None:
        torch.manual_seed(args.seed)
    torch.nn.Linear(4, 2)(torch.ones(4)).sum().backward()
"""


def _acl109(tmp_path):
    result = CliRunner().invoke(main, ["scan", str(tmp_path), "--format", "json", "--no-cache", "--select", "ACL109"])
    return [f["severity"] for f in json.loads(result.output)["findings"] if f["rule"] == "ACL109"]


def test_a_seed_behind_a_flag_is_info_when_no_launch_script_shows_how_the_run_starts(tmp_path):
    (tmp_path / "train.py").write_text(SEED_BEHIND_FLAG)
    assert _acl109(tmp_path) == ["info"]


def test_a_seed_behind_a_flag_is_a_warning_when_the_launch_script_does_not_pass_it(tmp_path):
    (tmp_path / "train.py").write_text(SEED_BEHIND_FLAG)
    (tmp_path / "run.sh").write_text("#!/bin/bash\npython train.py --epochs 1\n")
    assert _acl109(tmp_path) == ["warning"]
