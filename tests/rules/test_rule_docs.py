"""docs/rules/*.md are generated from the rules; they must not go stale."""

from pathlib import Path

from acclint.reports import render_rule_page
from acclint.rules import all_rules

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules"


def test_rule_pages_are_current():
    for rule in all_rules():
        page = DOCS / f"{rule.code}.md"
        assert page.is_file(), f"missing {page}; regenerate with write_rule_pages"
        assert page.read_text(encoding="utf-8").strip() == render_rule_page(rule, fmt="markdown").strip(), (
            f"{page} is stale; regenerate: python -c \"from acclint.rules import all_rules; "
            "from acclint.reports import write_rule_pages; write_rule_pages(all_rules(), 'docs/rules')\"")


def test_readme_rule_table_is_current():
    import importlib.util

    from acclint.reports import render_rule_list

    spec = importlib.util.spec_from_file_location("gen_docs", DOCS.parents[1] / "tools" / "gen_docs.py")
    gen_docs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_docs)
    readme = gen_docs.README.read_text("utf-8")
    assert gen_docs.readme_with_table(readme, render_rule_list(all_rules(), fmt="markdown")) == readme, (
        "README.md's rule table is stale; regenerate: PYTHONPATH=src python tools/gen_docs.py")


def test_readme_example_output_is_what_the_bundled_examples_give(tmp_path):
    """The README shows `acclint scan examples`; its summary line must be the real one."""
    import re

    from click.testing import CliRunner

    from acclint.cli import main

    root = DOCS.parents[1]
    shown = re.search(r"\$ acclint scan examples\n.*?\n(Found [^\n]+)\n```", (root / "README.md").read_text("utf-8"),
                      re.S)
    assert shown is not None, "README.md lacks the `acclint scan examples` block"
    result = CliRunner().invoke(main, ["scan", str(root / "examples"), "--no-cache", "--cache-dir", str(tmp_path)])
    assert shown.group(1) == result.output.strip().splitlines()[-1]
