"""Issue 28's numerics families, scanned as small training programs: the premises each finding states, with
their evidence, and the near misses the rules leave alone."""

from __future__ import annotations

import textwrap

from acclint.config import Config
from acclint.linter.engine import scan
from acclint.rules import all_rules

RULES = {rule.code: rule for rule in all_rules()}


def _scan(tmp_path, files: dict, code: str):
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return scan([tmp_path], [RULES[code]], Config(preview=True), jobs=1, cwd=tmp_path).findings


def _premise(finding, name: str):
    (found,) = [p for p in finding.premises if p.premise == name]
    return found


_DOUBLE_STEP = """
    import torch

    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    for x in [torch.randn(4, 8)]:
        loss = model(x).sum()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        {second}
"""


def test_a_second_optimizer_step_is_proven_to_run_in_the_same_iteration(tmp_path):
    findings = _scan(tmp_path, {"train.py": _DOUBLE_STEP.format(second="optimizer.step()")}, "ACL613")
    (finding,) = findings
    assert finding.line == 12 and "second time" in finding.message and "train.py:10" in finding.message
    value = _premise(finding, "value")
    assert value.proven and "train.py:12" in value.evidence and "loop body of `<module>`" in value.evidence
    assert finding.proven


def test_the_other_side_of_an_if_is_not_a_second_step(tmp_path):
    source = _DOUBLE_STEP.replace("        scaler.step(optimizer)\n        scaler.update()\n        {second}\n", """\
        if x.sum() > 0:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
""")
    assert _scan(tmp_path, {"train.py": source}, "ACL613") == []


def test_a_step_after_the_loop_is_not_in_the_iteration(tmp_path):
    source = _DOUBLE_STEP.format(second="").rstrip() + "\noptimizer.step()\n"
    assert _scan(tmp_path, {"train.py": source}, "ACL613") == []
