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
