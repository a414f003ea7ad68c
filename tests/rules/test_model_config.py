"""Values through configs and defaults: ACL301 (a norm built without the model's epsilon) and ACL209
(dropout probabilities behind a constant, a constructor default or a config class's default)."""

from __future__ import annotations

import inspect
import textwrap

import pytest

from acclint.config import Config
from acclint.linter.engine import scan
from acclint.rules.determinism import DropoutInParityRun
from acclint.rules.model_config import NormEpsilonNotFromConfig, library_norms

RULE = NormEpsilonNotFromConfig()


def _scan(tmp_path, files: dict, rule=RULE, given=None):
    for relative, source in files.items():
        target = tmp_path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(source), encoding="utf-8")
    paths = [tmp_path / p for p in given] if given else [tmp_path]
    result = scan(paths, [rule], Config(preview=True), jobs=1, cwd=tmp_path)
    assert result.errors == []
    return {(f.path, f.line): f for f in result.findings if f.rule == rule.code}


CONFIG_MODULE = """
    class TinyConfig:
        model_type = "tiny"

        def __init__(self, hidden_size=64, layer_norm_eps=1e-12):
            self.hidden_size = hidden_size
            self.layer_norm_eps = layer_norm_eps
"""

MODEL_MODULE = """
    from torch import nn

    from .configuration_tiny import TinyConfig


    class TinyEncoder(nn.Module):
        def __init__(self, config: TinyConfig):
            super().__init__()
            self.norm = nn.LayerNorm(config.hidden_size)
            self.kept = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
"""


def test_config_class_in_another_module_gives_its_value_and_the_default(tmp_path):
    files = {"tiny/__init__.py": "", "tiny/configuration_tiny.py": CONFIG_MODULE, "tiny/modeling_tiny.py": MODEL_MODULE}
    found = _scan(tmp_path, files)
    assert set(found) == {("tiny/modeling_tiny.py", 10)}
    finding = found[("tiny/modeling_tiny.py", 10)]
    assert finding.severity == "warning"
    assert "eps=1e-05" in finding.message and "1e-12" in finding.message
    assert "TinyConfig.layer_norm_eps" in finding.message and "tiny/configuration_tiny.py:7" in finding.message
    assert finding.fix == "pass eps=config.layer_norm_eps"


def test_a_model_file_scanned_alone_reads_its_config_module_as_context(tmp_path):
    files = {"tiny/__init__.py": "", "tiny/configuration_tiny.py": CONFIG_MODULE, "tiny/modeling_tiny.py": MODEL_MODULE}
    alone = _scan(tmp_path, files, given=["tiny/modeling_tiny.py"])
    assert set(alone) == {("tiny/modeling_tiny.py", 10)}
    assert "1e-12" in alone[("tiny/modeling_tiny.py", 10)].message


def test_config_class_named_by_config_class_attribute(tmp_path):
    model = """
        from torch import nn

        from .configuration_tiny import TinyConfig


        class TinyPreTrainedModel(nn.Module):
            config_class = TinyConfig


        class TinyModel(TinyPreTrainedModel):
            def __init__(self, config):
                super().__init__()
                self.final_norm = nn.LayerNorm(config.hidden_size)
    """
    files = {"tiny/__init__.py": "", "tiny/configuration_tiny.py": CONFIG_MODULE, "tiny/modeling_tiny.py": model}
    assert set(_scan(tmp_path, files)) == {("tiny/modeling_tiny.py", 14)}


def test_a_declared_config_without_epsilon_silences_it(tmp_path):
    config = """
        class TinyConfig:
            def __init__(self, hidden_size=64):
                self.hidden_size = hidden_size
    """
    files = {"tiny/__init__.py": "", "tiny/configuration_tiny.py": config, "tiny/modeling_tiny.py": MODEL_MODULE
             .replace(", eps=config.layer_norm_eps", "")}
    assert _scan(tmp_path, files) == {}


def test_reads_of_another_declared_config_do_not_count(tmp_path):
    # The audio encoder declares its own config (defined outside the project): the text model's read of
    # rms_norm_eps says nothing about it. The text model's own projector is reported, as info: the value
    # of a config class outside the project is not known.
    model = """
        from torch import nn
        from transformers import AudioConfig, TextConfig


        class AudioLayer(nn.Module):
            def __init__(self, config: AudioConfig):
                super().__init__()
                self.norm = nn.LayerNorm(config.d_model)


        class TextLayer(nn.Module):
            def __init__(self, config: TextConfig):
                super().__init__()
                self.norm = nn.LayerNorm(config.hidden_size, eps=config.rms_norm_eps)
                self.proj_norm = nn.LayerNorm(config.hidden_size)
    """
    found = _scan(tmp_path, {"modeling.py": model})
    assert set(found) == {("modeling.py", 16)}
    assert found[("modeling.py", 16)].severity == "info"
    assert "wherever the config's value is not 1e-05" in found[("modeling.py", 16)].message


def test_equal_values_are_info(tmp_path):
    model = """
        from dataclasses import dataclass

        from torch import nn


        @dataclass
        class ModelArgs:
            dim: int = 64
            norm_eps: float = 1e-5


        class Block(nn.Module):
            def __init__(self, args: ModelArgs):
                super().__init__()
                self.norm = nn.LayerNorm(args.dim)
    """
    found = _scan(tmp_path, {"model.py": model})
    assert [f.severity for f in found.values()] == ["info"]
    assert "equal today" in next(iter(found.values())).message


@pytest.mark.parametrize("own_default, severity", [("1e-5", "info"), ("1e-6", "warning")])
def test_an_own_epsilon_parameter_is_a_warning_only_where_its_default_differs(tmp_path, own_default, severity):
    """A block's `norm_eps` parameter that never reaches its LayerNorm changes the built model only when its
    default differs from the layer's; with equal defaults only a caller passing another value would notice."""
    model = f"""
        from torch import nn


        class Block(nn.Module):
            def __init__(self, dim, norm_eps={own_default}):
                super().__init__()
                self.norm = nn.LayerNorm(dim)
                self.proj = nn.Linear(dim, dim)
    """
    found = _scan(tmp_path, {"model.py": model})
    assert [f.severity for f in found.values()] == [severity]
    assert "never reaches this layer" in next(iter(found.values())).message


def test_epsilon_set_after_construction_and_unrelated_eps_are_not_reported(tmp_path):
    model = """
        from torch import nn


        class Block(nn.Module):
            def __init__(self, config, eps=1e-8):
                super().__init__()
                self.eps = eps  # a division guard, not a norm's
                self.norm = nn.LayerNorm(config.hidden_size)
                self.norm.eps = config.layer_norm_eps
                self.bn = nn.BatchNorm2d(8)
    """
    assert _scan(tmp_path, {"model.py": model}) == {}


def test_mindspore_layernorm_default_comes_from_the_framework_table(tmp_path):
    model = """
        import mindspore.nn as nn


        class Block(nn.Cell):
            def __init__(self, hidden, layer_norm_eps=1e-5):
                super().__init__()
                self.norm = nn.LayerNorm((hidden,))
                self.mint_norm = nn.LayerNorm((hidden,), epsilon=layer_norm_eps)
    """
    found = _scan(tmp_path, {"block.py": model})
    assert set(found) == {("block.py", 8)}
    assert "epsilon=1e-07" in found[("block.py", 8)].message
    assert found[("block.py", 8)].fix == "pass epsilon=layer_norm_eps"


def test_npu_rms_norm_in_a_norm_class_that_stores_its_epsilon(tmp_path):
    model = """
        import torch
        import torch_npu
        from torch import nn


        class FusedRMSNorm(nn.Module):
            def __init__(self, hidden, eps=1e-5):
                super().__init__()
                self.weight = nn.Parameter(torch.ones(hidden))
                self.eps = eps

            def forward(self, x):
                return torch_npu.npu_rms_norm(x, self.weight)[0]
    """
    found = _scan(tmp_path, {"norm.py": model})
    assert set(found) == {("norm.py", 14)}
    assert found[("norm.py", 14)].fix == "pass epsilon=self.eps"
    assert "epsilon=1e-06" in found[("norm.py", 14)].message


def test_test_code_is_not_judged(tmp_path):
    files = {"tests/test_model.py": MODEL_MODULE.replace("from .configuration_tiny import TinyConfig",
                                                         "from configuration_tiny import TinyConfig"),
             "tests/configuration_tiny.py": CONFIG_MODULE}
    assert _scan(tmp_path, files) == {}


# The table's defaults are the installed frameworks' own (torch 2.13, MindSpore 2.10): read them back.
def _installed(api: str):
    module_name, _, member = api.rpartition(".")
    module = pytest.importorskip(module_name.split(".")[0])
    for part in module_name.split(".")[1:] + [member]:
        module = getattr(module, part)
    function = module.__init__ if inspect.isclass(module) else module
    return list(inspect.signature(function).parameters.values())


@pytest.mark.parametrize("api", sorted(a for a in library_norms() if not a.startswith("torch_npu")))
def test_norm_table_matches_the_installed_frameworks(api):
    norm = library_norms()[api]
    params = [p for p in _installed(api) if p.name != "self"]
    assert params[norm.position].name == norm.keyword
    default = params[norm.position].default
    if isinstance(norm.default, float):
        assert default == pytest.approx(norm.default)
    else:
        assert default is None  # torch.nn.RMSNorm: decided by the input's dtype, as the table says


DROPOUT = DropoutInParityRun()

DROPOUT_ENTRY = """
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self, hidden, dropout=0.1):
            super().__init__()
            dropout = min(dropout, 0.5)
            self.drop = nn.Dropout(dropout)


    class Head(nn.Module):
        def __init__(self, config, p=0.3):
            super().__init__()
            self.drop = nn.Dropout(config.classifier_dropout)
            self.drop2 = nn.Dropout(p)


    if __name__ == "__main__":
        torch.manual_seed(0)
        net = Net(8)
        head = Head(object(), 0.0)
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.ones(2)).sum().backward()
        opt.step()
"""


def test_dropout_names_that_cannot_be_followed_stay_quiet(tmp_path):
    # A rebound parameter, a config attribute no config class defines, a default a caller overrides by position.
    assert _scan(tmp_path, {"train.py": DROPOUT_ENTRY}, rule=DROPOUT) == {}


def test_dropout_default_reported_when_no_caller_passes_it(tmp_path):
    source = DROPOUT_ENTRY.replace("head = Head(object(), 0.0)", "head = Head(object())")
    found = _scan(tmp_path, {"train.py": source}, rule=DROPOUT)
    assert set(found) == {("train.py", 17)}
    assert "p=0.3" in found[("train.py", 17)].message and "Head.__init__" in found[("train.py", 17)].message


def test_a_config_declared_outside_the_project_is_not_another_local_config(tmp_path):
    # AudioConfig comes from an installed package: the local TextConfig's epsilon is not its epsilon.
    model = """
        from dataclasses import dataclass

        from torch import nn
        from transformers import AudioConfig


        @dataclass
        class TextConfig:
            rms_norm_eps: float = 1e-6


        class AudioLayer(nn.Module):
            def __init__(self, config: AudioConfig):
                super().__init__()
                self.norm = nn.LayerNorm(config.d_model)
    """
    assert _scan(tmp_path, {"modeling.py": model}) == {}


def test_functional_layer_norm_in_a_norm_class_forward(tmp_path):
    model = """
        import torch
        import torch.nn.functional as F
        from torch import nn


        class TinyLayerNorm(nn.Module):
            def __init__(self, hidden, eps=1e-12):
                super().__init__()
                self.weight = nn.Parameter(torch.ones(hidden))
                self.bias = nn.Parameter(torch.zeros(hidden))
                self.variance_epsilon = eps

            def forward(self, x):
                return F.layer_norm(x, self.weight.shape, self.weight, self.bias)
    """
    found = _scan(tmp_path, {"norm.py": model})
    assert set(found) == {("norm.py", 15)}
    assert found[("norm.py", 15)].fix == "pass eps=self.variance_epsilon"


def test_a_config_under_another_name_is_another_config(tmp_path):
    model = """
        from torch import nn


        class Quantizer(nn.Module):
            def __init__(self, quantizer_config):
                super().__init__()
                self.norm = nn.LayerNorm(quantizer_config.dim)


        class DecoderLayer(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.norm = nn.LayerNorm(config.hidden_size, eps=config.rms_norm_eps)
    """
    assert _scan(tmp_path, {"modeling.py": model}) == {}


def test_functional_norms_outside_a_norm_class_are_operations_of_their_own(tmp_path):
    # Normalising regression targets with F.layer_norm is no model layer that cfg.norm_eps is meant for.
    model = """
        from dataclasses import dataclass

        import torch.nn.functional as F
        from torch import nn


        @dataclass
        class StudentConfig:
            norm_eps: float = 1e-6


        class Student(nn.Module):
            def __init__(self, cfg: StudentConfig):
                super().__init__()
                self.norm = nn.LayerNorm(8, eps=cfg.norm_eps)

            def targets(self, y):
                return F.layer_norm(y, y.shape[-1:])
    """
    assert _scan(tmp_path, {"model.py": model}) == {}
