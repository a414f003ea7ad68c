"""docs/rules/*.md, the rule tables and the site's rule nav are generated from the rules; they must not go stale."""

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


def _gen_docs():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_docs", DOCS.parents[1] / "tools" / "gen_docs.py")
    gen_docs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_docs)
    return gen_docs


def test_rule_tables_and_the_site_nav_are_current():
    """The README and docs/rules.md show the generated rule table; the site's nav lists every rule page."""
    from acclint.reports import render_rule_list

    gen_docs = _gen_docs()
    table = render_rule_list(all_rules(), fmt="markdown")
    for page in gen_docs.TABLE_PAGES:
        text = page.read_text("utf-8")
        assert gen_docs.readme_with_table(text, table) == text, (
            f"{page.name}'s rule table is stale; regenerate: PYTHONPATH=src python tools/gen_docs.py")
    config = gen_docs.SITE_CONFIG.read_text("utf-8")
    assert gen_docs.nav_with_rule_pages(config, [rule.code for rule in all_rules()]) == config, (
        "mkdocs.yml's rule pages are stale; regenerate: PYTHONPATH=src python tools/gen_docs.py")


def test_the_generator_replaces_only_what_lies_between_its_markers():
    gen_docs = _gen_docs()
    page = f"intro\n{gen_docs.START}\nold table\n{gen_docs.END}\noutro\n"
    assert gen_docs.readme_with_table(page, "new") == f"intro\n{gen_docs.START}\nnew\n{gen_docs.END}\noutro\n"
    nav = f"nav:\n  - Rules:\n      {gen_docs.NAV_START}\n      - rules/OLD.md\n      {gen_docs.NAV_END}\n  - End: e.md\n"
    assert gen_docs.nav_with_rule_pages(nav, ["ACL2", "ACL1"]) == (
        f"nav:\n  - Rules:\n      {gen_docs.NAV_START}\n      - rules/ACL1.md\n      - rules/ACL2.md\n"
        f"      {gen_docs.NAV_END}\n  - End: e.md\n")


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
