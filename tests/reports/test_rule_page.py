"""`acclint rules` and the rule pages (text, markdown, JSON, docs/rules/*.md)."""

import json
import re

import pytest

from acclint.findings import CATEGORIES
from acclint.linter.rulebase import Example, Rule, RuleDoc
from acclint.reports.rule_page import (
    render_rule_list,
    render_rule_page,
    write_rule_pages,
)


def make_rule(code, category, *, name=None, severity="warning", invalid=(), valid=(),
              references=()):
    return type(f"Rule{code}", (Rule,), dict(
        code=code, name=name or f"rule-{code.lower()}", category=category, severity=severity,
        summary=f"summary of {code}",
        doc=RuleDoc(what="""
            Finds the thing.

            In two paragraphs.
            """, why="GPU 0.1% vs NPU 3% drift.", fix="Do the other thing.",
            references=references),
        invalid=invalid, valid=valid))()


NUMPY = make_rule(
    "ACL101", "seed", name="unseeded-numpy",
    invalid=(
        Example.script("import numpy as np\nx = np.random.rand(3)  # expect: ACL101\n",
                       title="Sampling before seeding"),
        Example.script("second invalid example, never shown\n"),
    ),
    valid=(Example({"train.py": "from util import seed\nseed()\n",
                    "util.py": "def seed():\n    np.random.seed(0)\n"}),),
    references=("https://numpy.org/doc/stable/reference/random/", "Ascend docs, 8.0"),
)
BARE = make_rule("ACL250", "determinism", severity="error")


# --- the table -----------------------------------------------------------------------------


def test_rule_list_groups_by_category_order_then_code():
    rules = [make_rule("ACL202", "determinism"), make_rule("ACL102", "seed"),
             make_rule("ACL801", "debug-tooling"), make_rule("ACL101", "seed"),
             make_rule("ACL201", "determinism")]
    lines = render_rule_list(rules).splitlines()
    assert lines[0].split() == ["CODE", "NAME", "CATEGORY", "SEVERITY", "MATURITY", "PRECISION", "SUMMARY"]
    codes = [line.split()[0] if line else "" for line in lines[1:]]
    assert codes == ["ACL101", "ACL102", "", "ACL201", "ACL202", "", "ACL801"]
    categories = [line.split()[2] for line in lines[1:] if line]
    assert categories == sorted(categories, key=CATEGORIES.index)


def test_rule_list_keeps_a_category_together_even_when_codes_interleave():
    rules = [make_rule("ACL101", "determinism"), make_rule("ACL102", "seed"),
             make_rule("ACL103", "determinism")]
    lines = render_rule_list(rules).splitlines()[1:]
    assert [line.split()[0] if line else "" for line in lines] == [
        "ACL102", "", "ACL101", "ACL103"]


def test_rule_list_columns_are_aligned_and_complete():
    lines = render_rule_list([NUMPY, BARE]).splitlines()
    starts = {line.index("summary of") for line in lines[1:] if line}
    assert len(starts) == 1  # one summary column
    row = next(line for line in lines if line.startswith("ACL101"))
    assert row.split()[:4] == ["ACL101", "unseeded-numpy", "seed", "warning"]
    assert row.endswith("summary of ACL101")


def test_rule_list_json():
    rows = json.loads(render_rule_list([BARE, NUMPY], fmt="json"))
    assert [row["code"] for row in rows] == ["ACL101", "ACL250"]
    assert rows[1] == {"code": "ACL250", "name": "rule-acl250", "category": "determinism",
                       "severity": "error", "maturity": "stable", "precision": "-",
                       "summary": "summary of ACL250"}


# --- one page -----------------------------------------------------------------------------


def headings(markdown: str) -> list[str]:
    return re.findall(r"^## (.+)$", markdown, flags=re.M)


def test_markdown_page_structure():
    page = render_rule_page(NUMPY, fmt="markdown")
    assert page.splitlines()[0] == "# ACL101 (unseeded-numpy)"
    assert "`seed`" in page and "`warning`" in page
    assert headings(page) == ["What it does", "Why it matters", "Example", "Use instead",
                              "How to fix", "References"]
    assert "Finds the thing.\n\nIn two paragraphs." in page  # dedented, paragraphs kept


def section(page: str, title: str) -> str:
    return page.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_example_is_the_first_invalid_one_without_markers():
    example = section(render_rule_page(NUMPY, fmt="markdown"), "Example")
    assert "```python\nimport numpy as np\nx = np.random.rand(3)\n```" in example
    assert "expect" not in example
    assert "Sampling before seeding" in example
    assert "never shown" not in example
    assert "`train.py`" not in example  # a single file needs no name


def test_use_instead_names_files_when_there_are_several():
    use_instead = section(render_rule_page(NUMPY, fmt="markdown"), "Use instead")
    assert "`train.py`:\n\n```python\nfrom util import seed" in use_instead
    assert "`util.py`:\n\n```python\ndef seed():" in use_instead
    assert use_instead.index("`train.py`") < use_instead.index("`util.py`")


def test_references_are_a_list():
    references = section(render_rule_page(NUMPY, fmt="markdown"), "References")
    assert references.strip().splitlines() == [
        "- https://numpy.org/doc/stable/reference/random/", "- Ascend docs, 8.0"]


def test_sections_without_content_are_left_out():
    assert headings(render_rule_page(BARE, fmt="markdown")) == [
        "What it does", "Why it matters", "How to fix"]


def test_code_fence_outgrows_backticks_in_the_source():
    rule = make_rule("ACL102", "seed", invalid=(
        Example.script('doc = """\n```\n"""\n', path="cfg.sh"),))
    example = section(render_rule_page(rule, fmt="markdown"), "Example")
    assert example.strip().startswith("````bash\n") and example.strip().endswith("\n````")


def test_text_page():
    page = render_rule_page(NUMPY)  # text is the default
    lines = page.splitlines()
    assert lines[0] == "ACL101 (unseeded-numpy)"
    assert lines[1] == "=" * len(lines[0])
    for title in ("What it does", "Why it matters", "Example", "Use instead", "How to fix",
                  "References"):
        assert f"\n{title}\n{'-' * len(title)}\n" in page
    assert "    x = np.random.rand(3)" in page  # code indented, not fenced
    assert "```" not in page and "expect" not in page


def test_json_page():
    page = json.loads(render_rule_page(NUMPY, fmt="json"))
    assert page["title"] == "ACL101 (unseeded-numpy)"
    assert (page["code"], page["category"], page["severity"]) == ("ACL101", "seed", "warning")
    assert page["what"] == "Finds the thing.\n\nIn two paragraphs."
    assert page["example"]["files"] == {"train.py": "import numpy as np\nx = np.random.rand(3)\n"}
    assert list(page["use_instead"]["files"]) == ["train.py", "util.py"]
    assert page["references"][1] == "Ascend docs, 8.0"
    assert json.loads(render_rule_page(BARE, fmt="json"))["example"] is None


@pytest.mark.parametrize("call", [
    lambda: render_rule_page(NUMPY, fmt="html"),
    lambda: render_rule_list([NUMPY], fmt="html"),
])
def test_unknown_formats_are_refused(call):
    with pytest.raises(ValueError):
        call()


def test_write_rule_pages(tmp_path):
    target = tmp_path / "docs" / "rules"
    written = write_rule_pages([BARE, NUMPY], target)
    assert [path.name for path in written] == ["ACL101.md", "ACL250.md"]
    assert sorted(p.name for p in target.iterdir()) == ["ACL101.md", "ACL250.md"]
    content = (target / "ACL101.md").read_text(encoding="utf-8")
    assert content == render_rule_page(NUMPY, fmt="markdown") + "\n"


def test_every_registered_rule_renders_in_every_format():
    from acclint.rules import all_rules

    for rule in all_rules():
        markdown = render_rule_page(rule, fmt="markdown")
        assert markdown.startswith(f"# {rule.code} ({rule.name})\n"), rule
        assert ("## Example" in markdown) == bool(rule.invalid), rule
        assert "# expect:" not in markdown, rule
        assert render_rule_page(rule, fmt="text").startswith(f"{rule.code} ({rule.name})\n")
        assert json.loads(render_rule_page(rule, fmt="json"))["code"] == rule.code
