"""The scan and the cyclic garbage collector: analysis leaves no reference cycles, and what a scan
freezes out of collections it unfreezes when it ends."""

from __future__ import annotations

import ast
import gc
from pathlib import Path

import pytest

from acclint.config import Config
from acclint.linter.analyze import analyze_file
from acclint.linter.collector import gc_paused, scan_heap
from acclint.linter.engine import scan
from acclint.linter.walker import _literal_text
from acclint.linter.facts import NOT_LITERAL
from acclint.rules import all_rules

REPO = Path(__file__).resolve().parents[2]
# Real code with every kind of literal, call and block: the examples and the linter's own sources.
CORPUS = sorted((REPO / "examples").rglob("*.py")) + sorted((REPO / "src" / "acclint" / "linter").glob("*.py"))


def test_analysis_leaves_no_reference_cycles():
    # Only the cyclic collector frees a cycle, and it walks every file's facts to find one: the
    # scan collects by hand once in a while (collector.py), so each cycle left per file costs there.
    rules = [rule.configured(Config(preview=True)) for rule in all_rules()]
    assert len(CORPUS) > 20
    gc.collect()
    with gc_paused():
        outcomes = [analyze_file(str(path), path.name, rules) for path in CORPUS]
        unreachable = gc.collect()
    assert all(outcome.facts is not None for outcome in outcomes)
    assert unreachable == 0


@pytest.mark.parametrize("token", ["0", "1_000", "0x1F", "0o17", "0b101", "1.5", "1e-3", ".5", "'a'", '"b"',
                                   "b'raw'", "r'\\d'", "u'x'", '"""doc\nstring"""', "'\\N{BULLET}'"])
def test_literal_tokens_read_as_python_reads_them(token):
    assert _literal_text(token) == ast.literal_eval(token)


@pytest.mark.parametrize("text", ["'open", "name", "f(1)", "1 +", "\0"])
def test_what_is_not_one_literal_is_not_literal(text):
    assert _literal_text(text) is NOT_LITERAL


def test_scan_unfreezes_what_it_froze(tmp_path):
    (tmp_path / "train.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2)\n")
    gc.collect()
    assert gc.get_freeze_count() == 0
    result = scan([tmp_path], all_rules(), Config(), jobs=1, cwd=tmp_path)
    assert result.files_scanned == 1
    assert gc.get_freeze_count() == 0


def test_freezes_while_a_scan_runs_and_only_then():
    with gc_paused():
        kept = [object() for _ in range(10)]
    assert gc.get_freeze_count() == 0  # outside a scan: nothing frozen
    with scan_heap():
        with gc_paused():
            kept += [[] for _ in range(10)]
        assert gc.get_freeze_count() >= 10
    assert gc.get_freeze_count() == 0


def test_leaves_the_callers_frozen_objects_frozen():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with scan_heap():
            with gc_paused():
                kept = [[] for _ in range(10)]
        assert kept and gc.get_freeze_count() >= frozen > 0
    finally:
        gc.unfreeze()
