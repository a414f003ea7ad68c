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
    # --preview: the rule's own severity (a trainer file alone proves no training run, see test_premises).
    result = CliRunner().invoke(main, ["scan", str(tmp_path), "--format", "json", "--no-cache", "--select", "ACL610",
                                       "--preview"])
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
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(4)).sum().backward()
    opt.step()
"""


def _acl109(tmp_path):
    result = CliRunner().invoke(main, ["scan", str(tmp_path), "--format", "json", "--no-cache", "--select", "ACL109"])
    return [f["severity"] for f in json.loads(result.output)["findings"] if f["rule"] == "ACL109"]


def test_a_seed_behind_a_flag_is_info_when_no_launch_script_shows_how_the_run_starts(tmp_path):
    (tmp_path / "train.py").write_text(SEED_BEHIND_FLAG)
    (tmp_path / "README.md").write_text("# Demo\n\n```python\nimport train  # python train.py --epochs 1\n```\n")
    assert _acl109(tmp_path) == ["info"]


def _acl109_messages(tmp_path):
    result = CliRunner().invoke(main, ["scan", str(tmp_path), "--format", "json", "--no-cache", "--select", "ACL109"])
    return [(f["severity"], f["message"]) for f in json.loads(result.output)["findings"] if f["rule"] == "ACL109"]


README_RUN = """\
# Training

Start it with:

```console
$ python train.py --epochs 1 \\
    --lr 0.1
```
"""


def test_a_readme_command_that_omits_the_flag_makes_the_opt_in_seed_a_warning(tmp_path):
    (tmp_path / "train.py").write_text(SEED_BEHIND_FLAG)
    (tmp_path / "README.md").write_text(README_RUN)
    [(severity, message)] = _acl109_messages(tmp_path)
    assert severity == "warning"
    assert "README.md:6) do not pass it" in message


def test_a_readme_command_that_passes_the_flag_runs_the_seed(tmp_path):
    (tmp_path / "train.py").write_text(SEED_BEHIND_FLAG)
    (tmp_path / "README.md").write_text(README_RUN.replace("--epochs 1", "--seed 7 --epochs 1"))
    assert _acl109_messages(tmp_path) == []


def test_placeholders_in_a_documented_command_are_arguments_not_redirections(tmp_path):
    (tmp_path / "train.py").write_text(SEED_BEHIND_FLAG)
    (tmp_path / "README.md").write_text(
        "```bash\naccelerate launch train.py \\\n  --cache_dir <CACHE_DIR> \\\n  --seed 42\n```\n")
    assert _acl109_messages(tmp_path) == []


def test_a_command_in_the_projects_docs_naming_the_script_from_the_root_counts(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "train.py").write_text(SEED_BEHIND_FLAG)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "usage.md").write_text("~~~bash\naccelerate launch examples/train.py --epochs 1\n~~~\n")
    # Another script of the same name elsewhere is not this one.
    (tmp_path / "docs" / "other.md").write_text("```\npython other/train.py --epochs 1\n```\n")
    [(severity, message)] = _acl109_messages(tmp_path / "examples")
    assert severity == "warning"
    assert "docs/usage.md:2) do not pass it" in message and "other.md" not in message


def test_a_seed_behind_a_flag_is_a_warning_when_the_launch_script_does_not_pass_it(tmp_path):
    (tmp_path / "train.py").write_text(SEED_BEHIND_FLAG)
    (tmp_path / "run.sh").write_text("#!/bin/bash\npython train.py --epochs 1\n")
    assert _acl109(tmp_path) == ["warning"]


def test_a_markdown_file_over_the_size_limit_is_not_read(tmp_path, monkeypatch):
    from acclint.linter import documented

    (tmp_path / "train.py").write_text(SEED_BEHIND_FLAG)
    (tmp_path / "README.md").write_text(README_RUN)
    monkeypatch.setattr(documented, "_MAX_MARKDOWN_BYTES", len(README_RUN) - 1)
    assert [severity for severity, _ in _acl109_messages(tmp_path)] == ["info"]  # as with no README at all
