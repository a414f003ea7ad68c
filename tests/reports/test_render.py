"""The CLI's entry into the reporters: `FORMATS` and `render`."""

import json

import pytest

import acclint
from acclint.findings import Finding, ScanResult
from acclint.linter.rulebase import Rule, RuleDoc
from acclint.reports import FORMATS, render, render_github, render_json, render_text


class UnseededNumpy(Rule):
    code = "ACL101"
    name = "unseeded-numpy"
    category = "seed"
    severity = "warning"
    summary = "NumPy RNG used before seeding"
    doc = RuleDoc(what="w", why="y", fix="f")


RESULT = ScanResult(1, [Finding("ACL101", "seed", "warning", "train.py", 2, 1, 2, 9, "m", "f")])


def test_formats_offered_to_the_cli():
    assert set(FORMATS) == {"text", "json", "github", "sarif", "html"}


def test_render_dispatches_to_the_renderers():
    assert render(RESULT, "text") == render_text(RESULT)
    assert render(RESULT, "text", show_fix=False, color=True) == render_text(
        RESULT, color=True, show_fix=False)
    assert render(RESULT, "json") == render_json(RESULT)
    assert render(RESULT, "github", [UnseededNumpy()]) == render_github(
        RESULT, {"ACL101": UnseededNumpy()})
    assert "title=ACL101 (unseeded-numpy)" in render(RESULT, "github", [UnseededNumpy()])
    page = render(RESULT, "html", [UnseededNumpy()], active_codes=frozenset({"ACL101"}))
    assert page.startswith("<!DOCTYPE html>") and 'id="rule-ACL101"' in page and 'data-rule="ACL101"' in page


def test_sarif_through_render_defaults_to_the_package_version(tmp_path):
    log = json.loads(render(RESULT, "sarif", [UnseededNumpy()], base_dir=str(tmp_path)))
    run = log["runs"][0]
    assert run["tool"]["driver"]["version"] == acclint.__version__
    assert run["tool"]["driver"]["rules"][0]["id"] == "ACL101"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"


def test_unknown_format_or_option_is_an_error():
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        render(RESULT, "xml")
    with pytest.raises(TypeError):
        render(RESULT, "text", colour=True)
