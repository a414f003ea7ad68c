"""Every rule's own valid and invalid examples, scanned as small projects on disk."""

from __future__ import annotations

import pytest

from acclint.config import Config
from acclint.linter.engine import scan
from acclint.rules import all_rules

RULES = all_rules()
CASES = [
    pytest.param(rule, kind, index, example, id=f"{rule.code}-{kind}-{index}")
    for rule in RULES
    for kind, examples in (("invalid", rule.invalid), ("valid", rule.valid))
    for index, example in enumerate(examples)
]


def _scan_example(example, rule, tmp_path):
    for relative, source in example.on_disk().items():
        target = tmp_path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source, encoding="utf-8")
    result = scan([tmp_path], [rule], Config(), jobs=1, cwd=tmp_path)
    assert result.errors == [], result.errors
    return {(f.path, f.line) for f in result.findings if f.rule == rule.code}, result


@pytest.mark.parametrize("rule,kind,index,example", CASES)
def test_rule_example(rule, kind, index, example, tmp_path):
    found, result = _scan_example(example, rule, tmp_path)
    if kind == "invalid":
        expected = example.expected(rule.code)
        assert expected, "an invalid example must mark where its finding lands"
        assert found == expected, [f.message for f in result.findings]
    else:
        assert found == set(), [f"{f.path}:{f.line} {f.message}" for f in result.findings]


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_every_rule_has_examples_and_docs(rule):
    assert rule.invalid and rule.valid
    assert rule.code.startswith("ACL") and len(rule.code) == 6
    assert rule.doc.what and rule.doc.why and rule.doc.fix and rule.summary


def test_codes_are_unique_and_grouped_by_category():
    codes = [r.code for r in RULES]
    assert len(codes) == len(set(codes))
    first_digit = {}
    for rule in RULES:
        first_digit.setdefault(rule.category, set()).add(rule.code[3])
    assert all(len(digits) == 1 for digits in first_digit.values()), first_digit
    assert len({next(iter(d)) for d in first_digit.values()}) == len(first_digit)
