"""linter.roles: which code is test code, so that no rule reports inside it."""

from __future__ import annotations

import textwrap

from acclint.linter.analyze import analyze_file
from acclint.linter import roles


def facts_of(tmp_path, source, name="module.py"):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return analyze_file(str(path), name, []).facts


def test_unittest_classes_and_their_subclasses_in_the_file(tmp_path):
    facts = facts_of(tmp_path, """
        import unittest


        class Base(unittest.TestCase):
            pass


        class Derived(Base):
            def setUp(self):
                pass


        class Model:
            def forward(self):
                pass
    """)
    assert roles.test_scopes(facts) == {"Base", "Derived"}


def test_helper_test_case_classes_by_their_name(tmp_path):
    facts = facts_of(tmp_path, """
        from absl.testing import absltest
        from mylib.testing import DistributedTestCase


        class A(absltest.TestCase):
            pass


        class B(DistributedTestCase):
            pass
    """)
    assert roles.test_scopes(facts) == {"A", "B"}


def test_pytest_functions_only_in_files_pytest_collects(tmp_path):
    source = """
        def test_loss():
            pass


        class TestTrainer:
            def test_step(self):
                pass


        def train():
            pass
    """
    assert roles.test_scopes(facts_of(tmp_path, source, "test_train.py")) == {"test_loss", "TestTrainer"}
    # A training script may define a function called test_* (an evaluation pass): not pytest's.
    assert roles.test_scopes(facts_of(tmp_path, source, "train.py")) == set()


def test_fixtures_are_test_code_anywhere(tmp_path):
    facts = facts_of(tmp_path, """
        import pytest


        @pytest.fixture
        def model():
            pass
    """, "helpers.py")
    assert roles.test_scopes(facts) == {"model"}


def test_nodes_cover_nested_functions_and_nothing_outside(tmp_path):
    facts = facts_of(tmp_path, """
        import unittest
        import torch


        class T(unittest.TestCase):
            def setUp(self):
                def inner():
                    torch.use_deterministic_algorithms(False)
                inner()


        torch.use_deterministic_algorithms(False)
    """)
    nodes = roles.test_nodes(facts)
    inside = [c.node for c in facts.calls if c.scope.startswith("T.")]
    outside = [c.node for c in facts.calls if c.scope == "<module>"]
    assert inside and set(inside) <= nodes
    assert outside and not set(outside) & nodes
