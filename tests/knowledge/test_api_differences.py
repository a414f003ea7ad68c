"""knowledge/api_differences.toml (generated from MindSpore's mapping pages) and its loader."""

from __future__ import annotations

import ast
import importlib
import inspect
import tomllib
from pathlib import Path

import pytest

from acclint.knowledge import api_differences as ad
from acclint.knowledge import table

BASELINE = tomllib.loads((Path(__file__).with_name("api_difference_pages.toml")).read_text())


def test_no_page_parsed_before_is_dropped():
    data = table("api_differences")
    for branch, count in BASELINE["pages"].items():
        assert data["pages"].get(branch, 0) >= count, f"{branch}: fewer mapping pages parsed than before"
    for branch, pages in BASELINE["documented"].items():
        lost = set(pages) - set(data["documented"].get(branch, ()))
        assert not lost, f"{branch}: pages whose differences the generator no longer finds: {sorted(lost)}"
        holding = {row.page for row in ad.all_rows() if row.holds_for(branch)}
        assert set(pages) <= holding, f"{branch}: documented pages without a row: {sorted(set(pages) - holding)}"


def test_rows_are_well_formed_and_ordered():
    rows = ad.all_rows()
    assert rows and {r.kind for r in rows} <= set(ad.KINDS)
    order = ad.branches()
    for row in rows:
        assert row.since in order and (not row.until or order.index(row.until) >= order.index(row.since))
        assert row.consequence and row.mindspore.startswith("mindspore.")
        if row.kind == "default-value":
            assert row.mindspore_default and row.torch_default and row.mindspore_default != row.torch_default
    keys = [(r.mindspore, r.mindspore_parameter, r.kind, order.index(r.since)) for r in rows]
    assert keys == sorted(keys)


def test_issue_cases_are_in_the_newest_rows():
    newest = {(r.mindspore, r.mindspore_parameter): r for r in ad.load(None)}
    slope = newest["mindspore.nn.LeakyReLU", "alpha"]
    assert (slope.mindspore_default, slope.torch_default) == ("0.2", "0.01")
    assert newest["mindspore.nn.InstanceNorm2d", "affine"].mindspore_default == "True"
    assert newest["mindspore.ops.L2Normalize", "axis"].torch_default == "1"
    assert newest["mindspore.ops.L2Normalize", "epsilon"].mindspore_default == "0.0001"
    assert ("mindspore.ops.L2Normalize", "") in newest  # the formula row
    assert newest["mindspore.nn.BatchNorm2d", "momentum"].kind == "parameter-meaning"


def test_version_picks_the_branch():
    assert ad.branch_for(None) == ad.branches()[-1]
    assert ad.branch_for("2.0.0") == "r2.0"
    assert ad.branch_for("1.10.1") == "r2.0"  # older than the oldest branch read
    assert ad.branch_for("2.4.5") == "r2.4.1"
    assert ad.branch_for("2.99") == ad.branches()[-1]
    dense_init = [r for r in ad.all_rows() if r.mindspore == "mindspore.nn.Dense" and r.kind == "init"]
    assert dense_init and dense_init[0].until == "r2.0"
    assert any(r in ad.load("2.0") for r in dense_init) and not any(r in ad.load("2.3.1") for r in dense_init)


def test_installed_version_is_read_without_importing_mindspore():
    import subprocess
    import sys

    code = ("import sys; from acclint.knowledge.api_differences import installed_version; "
            "v = installed_version(); print(v, 'mindspore' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[1] == "False"
    assert out[0] == importlib.metadata.version("mindspore")


def _comparable(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def test_open_rows_match_the_installed_mindspore():
    """Rows still open (pages removed from the docs in r2.5 keep theirs) must still be true of the
    MindSpore installed here: its signature gives the documented default."""
    checked = 0
    for row in ad.load(None):
        if not row.mindspore_parameter or row.until:
            continue
        module, _, name = row.mindspore.rpartition(".")
        try:
            api = getattr(importlib.import_module(module), name)
            parameter = inspect.signature(api).parameters.get(row.mindspore_parameter)
        except (ImportError, AttributeError, ValueError, TypeError):
            continue
        if parameter is None or parameter.default is inspect.Parameter.empty:
            continue  # behind **kwargs in this release
        expected = _comparable(row.mindspore_default)
        actual = parameter.default
        if hasattr(actual, "name") and isinstance(expected, str) and "." in expected:
            actual, expected = actual.name, expected.rsplit(".", 1)[1]  # an enum member: Inter.BICUBIC
        if isinstance(expected, (int, float, bool, str)) or expected is None:
            assert actual == expected, f"{row.mindspore}({row.mindspore_parameter}=...)"
            checked += 1
    assert checked >= 20
