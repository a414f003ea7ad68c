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


_TRAIN = """
    import torch
    {npu}
    from numerics import configure

    if __name__ == "__main__":
        configure()
        model = torch.nn.Linear(8, 8){device}
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(4, 8){device}).sum().backward()
        optimizer.step()
"""
_CONFIGURE = """
    import torch


    def configure():
        torch.set_float32_matmul_precision("high")
"""


def test_a_tf32_switch_in_a_module_an_npu_program_imports_is_a_proven_warning(tmp_path):
    files = {"train.py": _TRAIN.format(npu="import torch_npu", device=".npu()"), "numerics.py": _CONFIGURE}
    (finding,) = _scan(tmp_path, files, "ACL605")
    assert (finding.path, finding.line, finding.severity) == ("numerics.py", 6, "warning")
    assert "TF32 (10 mantissa bits)" in finding.message and "float32 (23 mantissa bits)" in finding.message
    value = _premise(finding, "value")
    assert value.proven and "numerics.py:6" in value.evidence and "torch.npu.matmul.allow_hf32" in value.evidence
    assert finding.proven


def test_the_same_switch_in_a_gpu_reference_program_is_info(tmp_path):
    files = {"train.py": _TRAIN.format(npu="", device=".cuda()"), "numerics.py": _CONFIGURE}
    (finding,) = _scan(tmp_path, files, "ACL605")
    assert finding.severity == "info" and "an NPU run at torch_npu's defaults" in finding.message


def test_hf32_on_states_the_gpu_side_it_is_compared_with(tmp_path):
    files = {"train.py": _TRAIN.format(npu="import torch_npu", device=".npu()"),
             "numerics.py": "import torch_npu\n\n\ndef configure():\n    torch_npu.npu.matmul.allow_hf32 = True\n"}
    (finding,) = _scan(tmp_path, files, "ACL616")
    assert (finding.path, finding.line) == ("numerics.py", 5)
    assert "HF32 (11 mantissa bits)" in finding.message and "float32 (23 mantissa bits)" in finding.message
    value = _premise(finding, "value")
    assert value.proven and "numerics.py:5" in value.evidence and "defaults to False" in value.evidence


def test_hf32_on_beside_cuda_tf32_is_left_alone(tmp_path):
    files = {"train.py": _TRAIN.format(npu="import torch_npu", device=".npu()"),
             "numerics.py": _CONFIGURE + "    torch.npu.matmul.allow_hf32 = True\n"}
    assert _scan(tmp_path, files, "ACL616") == []
