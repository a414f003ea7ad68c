"""Every rule's own valid and invalid examples, scanned as small projects on disk."""

from __future__ import annotations

import pytest

from acclint.rule_examples import cases, example_problem, metadata_problem
from acclint.rules import all_rules

RULES = all_rules()
CASES = [
    pytest.param(rule, kind, index, example, id=f"{rule.code}-{kind}-{index}")
    for rule in RULES
    for kind, index, example in cases(rule)
]


@pytest.mark.parametrize("rule,kind,index,example", CASES)
def test_rule_example(rule, kind, index, example, tmp_path):
    problem = example_problem(rule, kind, example, tmp_path)
    assert problem is None, problem


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_every_rule_has_examples_and_docs(rule):
    assert metadata_problem(rule) is None, metadata_problem(rule)
    assert rule.code.startswith("ACL") and len(rule.code) == 6


def test_codes_are_unique_and_grouped_by_category():
    codes = [r.code for r in RULES]
    assert len(codes) == len(set(codes))
    first_digit = {}
    for rule in RULES:
        first_digit.setdefault(rule.category, set()).add(rule.code[3])
    assert all(len(digits) == 1 for digits in first_digit.values()), first_digit
    assert len({next(iter(d)) for d in first_digit.values()}) == len(first_digit)


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_code_follows_the_category_scheme(rule):
    """ACL + the category's digit (acclint.codes.CATEGORY_DIGITS, CONTRIBUTING.md) + two digits."""
    from acclint.codes import code_problem

    assert code_problem(rule.code, rule.category) is None, code_problem(rule.code, rule.category)
