"""Layers built from classes passed as values (linter.class_values): the walk records the construction
`norm_layer(dim)` makes, with the class and the arguments it gets there, as one more Call."""

from __future__ import annotations

from acclint.config import Config
from acclint.linter.engine import scan
from acclint.linter.rulebase import code
from acclint.rules import framework_default
from test_walker_and_project import facts_of


def built(facts, name: str = "torch.nn.LayerNorm") -> list:
    return [c for c in facts.calls if c.built_from is not None and name in c.names]


def _args(call) -> dict:
    return {a.keyword if a.keyword else i: a.value.literal for i, a in enumerate(call.args)}


def test_a_parameter_default_builds_its_class_with_the_arguments_of_the_call(tmp_path):
    facts = facts_of(tmp_path, code("""
        import torch.nn as nn


        class Block(nn.Module):
            def __init__(self, dim, norm_layer=nn.LayerNorm, act_layer=nn.GELU):
                super().__init__()
                self.norm = norm_layer(dim, eps=1e-6)
                self.act = act_layer()


        block = Block(8)
    """))
    [norm] = built(facts)
    assert norm.callee == "nn.LayerNorm" and _args(norm)["eps"] == 1e-6
    assert norm.built_from.name == "norm_layer" and norm.built_from.proven  # Block(8) leaves the default
    assert facts.spans[norm.built_from.site].line == 11
    [act] = built(facts, "torch.nn.GELU")
    assert act.args == ()
    # Recorded right after the call as written, at its node: source order holds.
    index = facts.calls.index(norm)
    assert facts.calls[index - 1].callee == "norm_layer" and facts.calls[index - 1].node == norm.node


def test_partial_binds_arguments_and_a_call_site_passes_the_class(tmp_path):
    facts = facts_of(tmp_path, code("""
        from functools import partial

        from torch import nn


        class Block(nn.Module):
            def __init__(self, dim, norm_layer=None):
                super().__init__()
                self.norm = norm_layer(dim)


        class Net(nn.Module):
            def __init__(self, norm_layer=partial(nn.LayerNorm, eps=1e-6)):
                super().__init__()
                self.blocks = nn.ModuleList([Block(8, norm_layer=norm_layer) for _ in range(2)])
    """))
    [norm] = built(facts)
    assert _args(norm)["eps"] == 1e-6 and norm.args[0].value.dotted == "dim"
    # Followed through Block(8, norm_layer=norm_layer) to Net's parameter, whose default it is.
    assert norm.built_from.name == "norm_layer" and norm.built_from.how == "the default of Net.__init__"
    assert not norm.built_from.proven  # nothing here constructs Net


def test_a_class_chosen_with_or(tmp_path):
    facts = facts_of(tmp_path, code("""
        from functools import partial

        from torch import nn


        class Block(nn.Module):
            def __init__(self, dim, norm_layer=None):
                super().__init__()
                norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-6)
                self.norm = norm_layer(dim)
    """))
    [norm] = built(facts)
    assert _args(norm)["eps"] == 1e-6 and norm.built_from.how == "assigned in Block.__init__"
    assert not norm.built_from.proven  # only when no norm_layer is passed


def test_a_dict_of_classes_and_a_local_partial(tmp_path):
    facts = facts_of(tmp_path, code("""
        import functools

        import torch.nn as nn

        NORMS = {"ln": nn.LayerNorm, "bn": nn.BatchNorm1d}


        def build(kind, dim):
            norm = NORMS[kind](dim)
            make = functools.partial(nn.LayerNorm, elementwise_affine=False)
            return norm, make(dim)
    """))
    from_dict = [c for c in facts.calls if c.built_from is not None and c.built_from.name == "NORMS"]
    assert {n for c in from_dict for n in c.names} == {"torch.nn.LayerNorm", "torch.nn.BatchNorm1d"}
    assert not any(c.built_from.proven for c in from_dict)  # which entry is used depends on `kind`
    [local] = [c for c in built(facts) if c.built_from.name == "make"]
    assert _args(local)["elementwise_affine"] is False


def test_a_default_no_construction_uses_is_not_built(tmp_path):
    facts = facts_of(tmp_path, code("""
        from functools import partial

        from torch import nn


        class Block(nn.Module):
            def __init__(self, dim, norm_layer=nn.LayerNorm):
                super().__init__()
                self.norm = norm_layer(dim)


        block = Block(8, norm_layer=partial(nn.LayerNorm, eps=1e-6))
    """))
    [norm] = built(facts)
    assert _args(norm)["eps"] == 1e-6 and norm.built_from.how == "passed to Block"


MINDSPORE_BLOCK = code("""
    from mindspore import nn


    class Block(nn.Cell):
        def __init__(self, dim, norm_layer=nn.LayerNorm):
            super().__init__()
            self.norm = norm_layer((dim,){epsilon})

        def construct(self, x):
            return self.norm(x)
""")


def _acl701(tmp_path, source: str) -> list:
    (tmp_path / "model.py").write_text(source, encoding="utf-8")
    result = scan([tmp_path], framework_default.RULES, Config(), jobs=1, cwd=tmp_path)
    return [f for f in result.findings if f.rule == "ACL701"]


def test_a_constructor_rule_sees_the_class_and_states_where_it_came_from(tmp_path):
    [finding] = _acl701(tmp_path, MINDSPORE_BLOCK.format(epsilon=""))
    assert finding.line == 7 and "built through `norm_layer`" in finding.message
    value = next(p for p in finding.premises if p.premise == "value")
    # No construction of Block in this module: the default may not be the class used.
    assert not value.proven and "model.py:5" in value.evidence


def test_the_epsilon_given_where_the_class_is_called_is_seen(tmp_path):
    assert _acl701(tmp_path, MINDSPORE_BLOCK.format(epsilon=", epsilon=1e-5")) == []


def test_a_torch_constructor_rule_benefits_too(tmp_path):
    from acclint.rules import model_config

    (tmp_path / "model.py").write_text(code("""
        from torch import nn


        class TextConfig:
            def __init__(self, hidden_size=768, layer_norm_eps=1e-12):
                self.hidden_size = hidden_size
                self.layer_norm_eps = layer_norm_eps


        class Block(nn.Module):
            def __init__(self, config: TextConfig, norm_layer=nn.LayerNorm):
                super().__init__()
                self.norm = norm_layer(config.hidden_size)
    """), encoding="utf-8")
    result = scan([tmp_path], model_config.RULES, Config(), jobs=1, cwd=tmp_path)
    assert [(f.rule, f.line) for f in result.findings if f.rule == "ACL301"] == [("ACL301", 13)]


def test_a_class_several_calls_pass_alike_is_built_once(tmp_path):
    facts = facts_of(tmp_path, code("""
        from torch import nn


        class ConvBN(nn.Module):
            def __init__(self, dim, act=None):
                super().__init__()
                self.act = act()


        a = ConvBN(8, act=nn.GELU)
        b = ConvBN(16, act=nn.GELU)
        c = ConvBN(16, act=nn.ReLU)
    """))
    assert sorted(n for c in facts.calls if c.built_from is not None for n in c.names) == [
        "torch.nn.GELU", "torch.nn.ReLU"]


def test_the_class_premise_and_a_rules_own_value_premise_are_one(tmp_path):
    from acclint.findings import Premise
    from acclint.linter.class_values import built_premises

    facts = facts_of(tmp_path, MINDSPORE_BLOCK.format(epsilon=""))
    [norm] = [c for c in facts.calls if c.built_from is not None]
    own = (Premise("trains", True, "t"), Premise("value", True, "the rule's own evidence"))
    merged = built_premises(facts, norm, own)
    values = [p for p in merged if p.premise == "value"]
    assert len(values) == 1 and not values[0].proven  # the class is not proven: neither is the finding
    assert "may hold" in values[0].evidence and "the rule's own evidence" in values[0].evidence
    assert merged[0] == own[0]


def test_a_classmethod_calling_cls_is_no_class_value_and_no_error(tmp_path):
    # `cls` is the class itself, not a parameter a caller passes a class through.
    facts = facts_of(tmp_path, code("""
        from torch import nn


        class Block(nn.Module):
            @classmethod
            def build(cls, dim, norm_layer=nn.LayerNorm):
                return cls(norm_layer(dim))

            def __init__(self, norm):
                super().__init__()
                self.norm = norm


        block = Block.build(8)
    """))
    [norm] = built(facts)
    assert norm.built_from.how.startswith("the default of Block.build")


def _write(root, files: dict) -> None:
    for path, source in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code(source))


def test_a_class_assigned_in_another_module_is_followed_through_imports(tmp_path):
    _write(tmp_path, {"pkg/__init__.py": "", "pkg/config.py": """
        from functools import partial

        from mindspore import nn

        NORM = partial(nn.LayerNorm, begin_norm_axis=-1)
        ACT = nn.GELU
    """, "pkg/layers.py": """
        from .config import NORM as NORM


        def make_norm(dim):
            return NORM((dim,))
    """, "pkg/model.py": """
        from mindspore import nn

        from .config import NORM
        from pkg.config import ACT


        class Block(nn.Cell):
            def __init__(self, dim, norm_layer=NORM):
                super().__init__()
                self.norm = norm_layer((dim,))
                self.act = ACT()


        class Net(nn.Cell):
            def __init__(self):
                super().__init__()
                self.block = Block(8)
    """})
    result = scan([tmp_path], framework_default.RULES, Config(), jobs=1, cwd=tmp_path)
    found = {(f.rule, f.path, f.line): f for f in result.findings if f.rule in ("ACL701", "ACL703")}
    assert set(found) == {("ACL701", "pkg/model.py", 10), ("ACL703", "pkg/model.py", 11),
                          ("ACL701", "pkg/layers.py", 5)}
    norm = found[("ACL701", "pkg/model.py", 10)]
    # The default of Block.__init__ (left by Block(8) in this module) holds NORM, assigned in config.py.
    assert "`NORM` is assigned in pkg/config.py" in norm.message and "default of Block.__init__" in norm.message
    assert all(p.proven for p in norm.premises if p.premise == "value")


def test_a_partial_in_another_module_that_binds_the_value_is_quiet(tmp_path):
    _write(tmp_path, {"config.py": """
        from functools import partial

        from mindspore import nn

        NORM = partial(nn.LayerNorm, epsilon=1e-5)
    """, "model.py": """
        from mindspore import nn

        from config import NORM


        class Block(nn.Cell):
            def __init__(self, dim, norm_layer=NORM):
                super().__init__()
                self.norm = norm_layer((dim,))
    """})
    result = scan([tmp_path], framework_default.RULES, Config(), jobs=1, cwd=tmp_path)
    assert [f for f in result.findings if f.rule == "ACL701"] == []
