"""Module settings (norm eps, BatchNorm momentum, dropout p, GELU approximation, ...) as kind module-config.

Real torch modules against real MindSpore cells: each setting is read in one spelling and one
convention, so an exact port compares clean and a default left as it is on one side is named.
"""

from __future__ import annotations

import pytest

from acclint.runtime import capture, compare, transfer_weights
from acclint.runtime_checks.model.module_settings import module_records
from acclint.runtime_checks.model.stages import STAGES


def run(setup):
    return capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch)


def settings(framework, module):
    (record,) = module_records(framework, [("m", module)])
    return record.settings


def test_unspecified_mindspore_layernorm_epsilon_is_module_config(make_torch, make_ms, build_ms_net, ms):
    net = build_ms_net()
    net.ln = ms.nn.LayerNorm((16,))  # MindSpore's default epsilon: 1e-7
    torch_side, ms_side = make_torch(), make_ms(model=net)
    transfer_weights(torch_side.model, ms_side.model)
    result = compare(run(torch_side), run(ms_side))
    assert [(m.kind, m.name, m.left) for m in result.causes] == [("module-config", "ln.eps", 1e-5)], result.verdict()
    (cause,) = result.causes
    assert cause.right == pytest.approx(1e-7) and "defaults to epsilon=1e-7" in cause.message
    # Whatever it moves downstream (a gradient norm here) follows from it, and it comes before the loss.
    assert all(m.consequence_of == "module-config" for m in result.mismatches if not m.is_cause)
    stages = [stage for stage, _ in STAGES]
    assert stages.index("settings") < stages.index("loss")
    assert "fix 'module settings' first" in result.verdict()


def test_exact_port_compares_its_settings_clean(make_torch, make_ms):
    # conftest's MindSpore net passes epsilon=1e-5 and momentum=0.9 (torch 0.1).
    torch_side, ms_side = make_torch(), make_ms()
    transfer_weights(torch_side.model, ms_side.model)
    left, right = run(torch_side), run(ms_side)
    assert {r.name: r.settings for r in right.modules}["bn"]["momentum"] == pytest.approx(0.1)
    result = compare(left, right)
    assert result.ok, result.verdict()
    settings_line = next(line for line in result.verdict().splitlines() if "module settings ..." in line)
    assert settings_line.endswith("ok: 3 setting(s) of 2 module(s) equal")  # ln.eps, bn.eps, bn.momentum


def test_batchnorm_momentum_in_one_convention(torch, ms):
    torch_default = settings("torch", torch.nn.BatchNorm1d(4))
    assert torch_default == {"eps": 1e-5, "momentum": 0.1}
    assert settings("mindspore", ms.nn.BatchNorm1d(4, momentum=0.9))["momentum"] == pytest.approx(0.1)
    # A port that copied torch's number into MindSpore's argument means the opposite.
    assert settings("mindspore", ms.nn.BatchNorm1d(4, momentum=0.1))["momentum"] == pytest.approx(0.9)
    assert settings("mindspore", ms.mint.nn.BatchNorm1d(4))["momentum"] == pytest.approx(0.1)


def test_dropout_p_and_keep_prob(torch, ms):
    assert settings("torch", torch.nn.Dropout(0.1)) == {"p": 0.1}
    assert settings("mindspore", ms.nn.Dropout(keep_prob=0.9))["p"] == pytest.approx(0.1)
    assert settings("mindspore", ms.nn.Dropout(p=0.2)) == {"p": 0.2}
    assert settings("mindspore", ms.mint.nn.Dropout(p=0.3)) == {"p": 0.3}


def test_gelu_approximation(torch, ms):
    assert settings("torch", torch.nn.GELU()) == {"approximate": "none"}
    assert settings("torch", torch.nn.GELU(approximate="tanh")) == {"approximate": "tanh"}
    assert settings("mindspore", ms.nn.GELU()) == {"approximate": "tanh"}  # MindSpore's default
    assert settings("mindspore", ms.nn.GELU(approximate=False)) == {"approximate": "none"}


def test_norm_eps_embedding_and_attention_scale(torch, ms):
    assert settings("torch", torch.nn.LayerNorm(4)) == {"eps": 1e-5}
    assert settings("torch", torch.nn.RMSNorm(4, eps=1e-6)) == {"eps": 1e-6}
    assert settings("mindspore", ms.nn.LayerNorm((4,))) == {"eps": pytest.approx(1e-7)}
    assert settings("mindspore", ms.mint.nn.LayerNorm(4)) == {"eps": 1e-5}
    assert settings("torch", torch.nn.Embedding(10, 4, padding_idx=0)) == {"padding_idx": 0, "max_norm": None}
    assert settings("mindspore", ms.mint.nn.Embedding(10, 4, padding_idx=0, max_norm=1.0)) == {
        "padding_idx": 0, "max_norm": 1.0}

    class LlamaRMSNorm(torch.nn.Module):  # user code: found by its name and its usual attribute
        def __init__(self) -> None:
            super().__init__()
            self.variance_epsilon = 1e-6

    class SelfAttention(ms.nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.scale = 0.125

    assert settings("torch", LlamaRMSNorm()) == {"eps": 1e-6}
    assert settings("mindspore", SelfAttention()) == {"scale": 0.125}
    assert module_records("torch", [("fc", torch.nn.Linear(2, 2)), ("act", torch.nn.ReLU())]) == []


def test_settings_follow_the_mapping_of_renamed_modules(make_fingerprint):
    from acclint.runtime_checks.model.fingerprint import ModuleRecord

    left, right = make_fingerprint(), make_fingerprint()
    left.modules = [ModuleRecord(name="ln", module="LayerNorm", settings={"eps": 1e-5})]
    right.modules = [ModuleRecord(name="layers.1", module="LayerNorm", settings={"eps": 1e-7})]
    assert compare(left, right).ok  # nothing matched by name, nothing compared
    result = compare(left, right, mapping={"prefixes": {"layers.1.": "ln."}})
    assert [(m.kind, m.name) for m in result.mismatches] == [("module-config", "ln.eps")]
    ignored = compare(left, right, mapping={"prefixes": {"layers.1.": "ln."}, "ignore": ["ln"]})
    assert ignored.ok


def _with_modules(fingerprint, framework, modules):
    fingerprint.framework = framework
    fingerprint.modules = module_records(framework, modules)
    return fingerprint


def test_documented_api_differences_are_named_as_the_static_rule_names_them(torch, ms, make_fingerprint):
    """LeakyReLU's slope and InstanceNorm's affine default, left at MindSpore's defaults in a port, are
    module-config mismatches worded from the same table row ACL711 reports them with."""
    from acclint.knowledge.api_differences import load

    assert settings("torch", torch.nn.LeakyReLU()) == {"negative_slope": 0.01}
    assert settings("mindspore", ms.nn.LeakyReLU()) == {"negative_slope": pytest.approx(0.2)}
    assert settings("torch", torch.nn.InstanceNorm2d(4)) == {"eps": 1e-5, "affine": False}
    assert settings("mindspore", ms.nn.InstanceNorm2d(4))["affine"] is True
    assert settings("mindspore", ms.nn.InstanceNorm2d(4, affine=False))["affine"] is False

    left = _with_modules(make_fingerprint(), "torch", [("act", torch.nn.LeakyReLU()),
                                                       ("norm", torch.nn.InstanceNorm2d(4))])
    right = _with_modules(make_fingerprint(), "mindspore", [("act", ms.nn.LeakyReLU()),
                                                            ("norm", ms.nn.InstanceNorm2d(4))])
    result = compare(left, right)
    found = {m.name: m for m in result.mismatches if m.kind == "module-config"}
    assert set(found) == {"act.negative_slope", "norm.affine"}
    rows = {(r.mindspore, r.mindspore_parameter): r for r in load(None)}
    slope, affine = rows["mindspore.nn.LeakyReLU", "alpha"], rows["mindspore.nn.InstanceNorm2d", "affine"]
    assert found["act.negative_slope"].message.endswith(f"{slope.consequence} [{slope.page}]")
    assert found["norm.affine"].message.endswith(f"{affine.consequence} [{affine.page}]")

    port = _with_modules(make_fingerprint(), "mindspore", [("act", ms.nn.LeakyReLU(alpha=0.01)),
                                                           ("norm", ms.nn.InstanceNorm2d(4, affine=False))])
    assert not [m for m in compare(left, port).mismatches if m.kind == "module-config"]
