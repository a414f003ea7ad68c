"""ACL711: MindSpore calls against the table of documented API differences (knowledge/api_differences.toml)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from click.testing import CliRunner

from acclint.cli import main
from acclint.config import Config
from acclint.linter.engine import scan
from acclint.rules import all_rules

RULES = all_rules()


def findings(tmp_path: Path, source: str, config: Config = None, codes=("ACL711",)):
    (tmp_path / "model.py").write_text(textwrap.dedent(source))
    rules = [r for r in RULES if r.code in codes or r.code.startswith("ACL70")]
    result = scan([tmp_path], rules, config or Config(), jobs=1, cwd=tmp_path)
    assert result.errors == []
    return [(f.rule, f.line, f.message) for f in result.findings]


def test_arguments_given_positionally_or_unpacked_settle_the_default(tmp_path):
    found = findings(tmp_path, """
        from mindspore import nn, ops
        a = nn.LeakyReLU(0.01)
        b = nn.InstanceNorm2d(64, 1e-5, 0.1, False)
        c = ops.L2Normalize(**kwargs)
        d = ops.leaky_relu(x, 0.2)
    """)
    # Only L2Normalize's formula remains: no argument can settle it.
    assert [(code, line) for code, line, _ in found] == [("ACL711", 5)]
    assert "another formula" in found[0][2] and "axis" not in found[0][2]


def test_hand_written_rules_keep_their_differences(tmp_path):
    found = findings(tmp_path, """
        from mindspore import nn
        norm = nn.LayerNorm((64,))
        bn = nn.BatchNorm2d(64, momentum=0.1)
        conv = nn.Conv2d(3, 8, 3, stride=2)
        tconv = nn.Conv2dTranspose(8, 8, 3, pad_mode="pad", padding=1)
    """)
    by_line = {line: code for code, line, _ in found}
    assert by_line[3] == "ACL701" and by_line[4] == "ACL702" and by_line[5] == "ACL706"
    assert [line for code, line, _ in found if code == "ACL711"] == [6]  # the transpose's has_bias=False
    assert "has_bias" in next(m for code, line, m in found if code == "ACL711")


def test_pytorch_and_mint_code_is_not_reported(tmp_path):
    assert findings(tmp_path, """
        import torch.nn as nn
        act = nn.LeakyReLU()
        norm = nn.InstanceNorm2d(64)
    """) == []
    assert findings(tmp_path, """
        from mindspore import mint
        act = mint.nn.LeakyReLU()
        pool = mint.nn.MaxPool2d(2)
    """) == []


def test_momentum_nearer_mindspore_convention_is_not_reported(tmp_path):
    found = findings(tmp_path, """
        from mindspore import nn
        bn = nn.SyncBatchNorm(64, momentum=0.97)
        bn2 = nn.SyncBatchNorm(64, momentum=0.01)
    """)
    assert [line for code, line, _ in found if code == "ACL711"] == [4]
    assert "0.99 here" in found[0][2]


def test_version_picks_the_rows(tmp_path):
    source = """
        from mindspore import nn
        proj = nn.Dense(64, 64)
    """
    old = findings(tmp_path, source, Config(mindspore_version="2.0.0"))
    assert [(code, line) for code, line, _ in old] == [("ACL711", 3)]
    assert "weight_init" in old[0][2] and "Dense.md" in old[0][2] and "MindSpore 2.0.0" in old[0][2]
    assert findings(tmp_path, source, Config(mindspore_version="2.3.1")) == []
    assert findings(tmp_path, source) == []  # the installed MindSpore (a 2.x after 2.0)


def test_pyproject_version_and_bad_value(tmp_path):
    (tmp_path / "model.py").write_text("from mindspore import nn\nproj = nn.Dense(64, 64)\n")
    (tmp_path / "pyproject.toml").write_text('[tool.acclint]\nmindspore-version = "2.0"\n')
    # --preview: the rule's own severity (a model file alone proves no training run, see test_premises).
    result = CliRunner().invoke(main, ["scan", str(tmp_path / "model.py"), "--select", "ACL711", "--no-cache",
                                       "--preview"])
    assert result.exit_code == 1 and "ACL711" in result.output and "weight_init" in result.output
    (tmp_path / "pyproject.toml").write_text('[tool.acclint]\nmindspore-version = "latest"\n')
    result = CliRunner().invoke(main, ["scan", str(tmp_path / "model.py"), "--select", "ACL711", "--no-cache"])
    assert result.exit_code == 2 and "mindspore-version must be a version string" in result.output


def test_rule_page_lists_each_difference_with_both_defaults_and_page():
    result = CliRunner().invoke(main, ["rule", "ACL711"])
    assert result.exit_code == 0
    text = result.output
    assert "`mindspore.nn.LeakyReLU` / `torch.nn.LeakyReLU`: default-value `alpha=0.2` vs `negative_slope=0.01`" in text
    assert "InstanceNorm2d.md" in text and "`affine=True` vs `affine=False`" in text
    assert "mindspore.ops.L2Normalize` / `torch.nn.functional.normalize`: formula" in text
    assert "(reported by its own ACL70x rule)" in text  # LayerNorm epsilon stays ACL701's


def test_the_version_in_force_is_part_of_the_cache_key():
    from acclint.knowledge.api_differences import installed_version
    from acclint.linter.cache import settings_key

    rules = [r for r in RULES if r.code == "ACL711"]
    assert settings_key(rules, Config(mindspore_version="2.0")) != settings_key(rules, Config())
    assert settings_key(rules, Config(mindspore_version=installed_version())) == settings_key(rules, Config())


def test_a_formula_alone_is_info(tmp_path):
    (tmp_path / "model.py").write_text("from mindspore import ops\nl2 = ops.L2Normalize(axis=1, epsilon=1e-12)\n")
    rules = [r for r in RULES if r.code == "ACL711"]
    result = scan([tmp_path], rules, Config(), jobs=1, cwd=tmp_path)
    assert [(f.line, f.severity) for f in result.findings] == [(2, "info")]


def test_apis_reached_through_their_defining_module(tmp_path):
    found = findings(tmp_path, """
        from mindspore.ops import operations as P
        from mindspore.nn.layer.activation import LeakyReLU
        from mindspore.nn import extend
        l2 = P.L2Normalize(axis=1, epsilon=1e-12)
        act = LeakyReLU()
        other = extend.LeakyReLU()
    """)
    assert [(code, line) for code, line, _ in found] == [("ACL711", 5), ("ACL711", 6)]
