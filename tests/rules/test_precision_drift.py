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
    assert value.proven and "train.py:12" in value.evidence and "loop body of `<module>`, the plain step under no `if`" in value.evidence
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


_ROTARY = """
    import torch
    from torch import nn


    class Rotary(nn.Module):
        def forward(self, x):
            pos = torch.arange({length}, device=x.device, dtype=x.dtype)
            return x * pos[None, :, None].cos()


    if __name__ == "__main__":
        model = nn.Sequential(nn.Linear(16, 16), Rotary()){cast}
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        model(torch.randn(2, 1024, 16)).float().pow(2).mean().backward()
        optimizer.step()
"""


def test_positions_name_the_cast_and_prove_the_arithmetic_only_with_a_known_length(tmp_path):
    (finding,) = _scan(tmp_path, {"train.py": _ROTARY.format(length="x.shape[1]", cast=".half()")}, "ACL617")
    assert finding.line == 8 and "above 2**11 = 2048" in finding.message
    value, material = _premise(finding, "value"), _premise(finding, "material")
    assert value.proven and "float16 (`.half()` at train.py:13)" in value.evidence
    assert not material.proven and "x.shape[...]" in material.evidence and not finding.proven
    (finding,) = _scan(tmp_path, {"train.py": _ROTARY.format(length="4096", cast=".half()")}, "ACL617")
    assert _premise(finding, "material").proven and finding.proven


def test_positions_a_low_dtype_holds_exactly_are_left_alone(tmp_path):
    assert _scan(tmp_path, {"train.py": _ROTARY.format(length="2048", cast=".half()")}, "ACL617") == []
    assert _scan(tmp_path, {"train.py": _ROTARY.format(length="4096", cast="")}, "ACL617") == []


_EMA = """
    import copy

    import torch
    from torch import nn


    class EMA:
        def __init__(self, model, decay={decay}):
            self.shadow = copy.deepcopy(model)
            self.decay = decay

        def update(self, model):
            for e, p in zip(self.shadow.parameters(), model.parameters()):
                e.copy_(self.decay * e + (1 - self.decay) * p)


    if __name__ == "__main__":
        model = nn.Linear(8, 8).to(torch.bfloat16)
        ema = EMA(model)
        ema.shadow.{upcast}
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(4, 8, dtype=torch.bfloat16)).float().mean().backward()
        optimizer.step()
        ema.update(model)
"""


def test_an_ema_states_the_resolution_arithmetic_of_its_decay(tmp_path):
    (finding,) = _scan(tmp_path, {"train.py": _EMA.format(decay="0.999", upcast="eval()")}, "ACL618")
    assert finding.line == 15 and "2**-9" in finding.message and "1 - decay = 0.001 is below it" in finding.message
    material = _premise(finding, "material")
    assert material.proven and material.evidence.startswith("1 - decay = 0.001 < 2**-9")
    assert "bfloat16 (`.to(torch.bfloat16)` at train.py:19)" in _premise(finding, "value").evidence


def test_an_ema_with_a_decay_bfloat16_resolves_or_a_float32_shadow_is_left_alone(tmp_path):
    assert _scan(tmp_path, {"train.py": _EMA.format(decay="0.99", upcast="eval()")}, "ACL618") == []
    assert _scan(tmp_path, {"train.py": _EMA.format(decay="0.9999", upcast="float()")}, "ACL618") == []


def test_a_plain_step_under_a_test_of_its_own_is_not_known_to_run_with_the_scaler(tmp_path):
    source = _DOUBLE_STEP.format(second="if torch.isfinite(loss):\n            optimizer.step()")
    assert _scan(tmp_path, {"train.py": source}, "ACL613") == []


def test_positions_outside_a_model_class_are_not_the_models(tmp_path):
    collate = _ROTARY.replace("class Rotary(nn.Module):", "class Rotary(nn.Module):\n    pass\n\n\nclass Collate:")
    source = collate.format(length="x.shape[1]", cast=".half()").replace("Rotary()", "nn.Identity()")
    assert _scan(tmp_path, {"train.py": source}, "ACL617") == []


def test_an_optimizers_moment_update_beside_a_copy_elsewhere_is_not_an_ema(tmp_path):
    source = """
        import copy

        import torch
        from torch import nn


        class Snapshot:
            def __init__(self, model):
                self.copy = copy.deepcopy(model)


        class Moments:
            def update(self, model, beta=0.9999):
                for m, p in zip(model.buffers(), model.parameters()):
                    m.mul_(beta).add_(p.detach(), alpha=1 - beta)


        if __name__ == "__main__":
            model = nn.Linear(8, 8).half()
            snapshot = Snapshot(model)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.randn(4, 8).half()).float().mean().backward()
            optimizer.step()
            Moments().update(model)
    """
    source = textwrap.dedent(source)
    assert _scan(tmp_path, {"train.py": source}, "ACL618") == []
    moved = source.replace("class Moments:\n    def update", "class Moments:\n    def __init__(self, model):\n"
                           "        self.copy = copy.deepcopy(model)\n\n    def update")
    assert "self.copy" in moved.split("class Moments")[1]
    assert [f.line for f in _scan(tmp_path, {"train.py": moved}, "ACL618")] == [19]
