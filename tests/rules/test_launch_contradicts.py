"""Branches a launch switches off: `if args.use_ascend == "True":` read as a guard with its value, and
a launch's flag values that make such a guard false (rules.flags.launch_contradicts)."""

from __future__ import annotations

import textwrap

import pytest

from acclint.linter.analyze import analyze_file
from acclint.linter.facts import FlagGuard
from acclint.linter.shell import read_shell_script
from acclint.rules.flags import launch_contradicts


def _guards_of_calls(tmp_path, source: str) -> dict:
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    facts = analyze_file(str(path), "train.py", []).facts
    return {call.callee: call.flag_guards for call in facts.calls}


def test_an_equality_test_guards_its_body_and_its_else(tmp_path):
    guards = _guards_of_calls(tmp_path, """
        if args.use_ascend == "True":
            init()
        else:
            init_nccl()
        if args.device != "npu":
            use_cuda()
        if args.world_size == 8:
            eight()
    """)
    assert guards["init"] == (FlagGuard("args.use_ascend", "equals", "True"),)
    assert guards["init_nccl"] == (FlagGuard("args.use_ascend", "differs", "True"),)
    assert guards["use_cuda"] == (FlagGuard("args.device", "differs", "npu"),)
    assert guards["eight"] == (FlagGuard("args.world_size", "equals", "8"),)


def _launch(tmp_path, line: str):
    script = tmp_path / "run.sh"
    script.write_text(f"#!/bin/bash\n{line}\n", encoding="utf-8")
    [launch] = read_shell_script(script).launches
    return launch


@pytest.mark.parametrize("guard, line, contradicted", [
    (FlagGuard("args.use_ascend", "equals", "True"), "python train.py --use_ascend False", True),
    (FlagGuard("args.use_ascend", "equals", "True"), "python train.py --use_ascend True", False),
    (FlagGuard("args.use_ascend", "equals", "True"), "python train.py --use-ascend=False", True),
    (FlagGuard("args.use_ascend", "differs", "True"), "python train.py --use_ascend True", True),
    (FlagGuard("args.use_ascend", "equals", "True"), "python train.py --epochs 3", False),  # not passed: unknown
    (FlagGuard("args.deterministic", "truthy"), "python train.py --deterministic 0", True),
    (FlagGuard("args.deterministic", "truthy"), "python train.py --deterministic", False),  # a bare switch: on
])
def test_a_launch_contradicts_a_guard_only_with_a_value_that_makes_it_false(tmp_path, guard, line, contradicted):
    assert launch_contradicts((guard,), _launch(tmp_path, line)) is contradicted
