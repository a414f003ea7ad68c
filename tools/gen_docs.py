#!/usr/bin/env python3
"""Regenerate the documentation that is derived from the rules: docs/rules/*.md, the rule table of the
README and of docs/rules.md, and the rule pages' entries in the site's nav (mkdocs.yml).

    PYTHONPATH=src python tools/gen_docs.py

Run it after adding or changing a rule, or after benchmarks/precision/measure.py --write-table
(maturity and precision show in both). tests/rules/test_rule_docs.py fails while any of them is stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RULES_PAGE = ROOT / "docs" / "rules.md"
SITE_CONFIG = ROOT / "mkdocs.yml"
START, END = "<!-- rule-table:start (tools/gen_docs.py) -->", "<!-- rule-table:end -->"
NAV_START, NAV_END = "# rule-pages:start (tools/gen_docs.py)", "# rule-pages:end"
TABLE_PAGES = (README, RULES_PAGE)  # the pages that show the rule table


def between(text: str, start: str, end: str, block: str, name: str) -> str:
    """`text` with what lies between the lines holding `start` and `end` replaced by `block`; the marker
    lines keep their indentation."""
    head, found, rest = text.partition(start)
    _, found_end, tail = rest.partition(end)
    if not (found and found_end):
        raise SystemExit(f"{name} lacks the markers {start} ... {end}")
    indent = head[head.rfind("\n") + 1:]
    return f"{head}{start}\n{block}\n{indent}{end}{tail}"


def readme_with_table(readme: str, table: str, name: str = "README.md") -> str:
    """A page with the text between the rule-table markers replaced by `table`."""
    return between(readme, START, END, table, name)


def nav_with_rule_pages(config: str, codes) -> str:
    """mkdocs.yml with one nav entry per rule page between the rule-pages markers."""
    head = config.partition(NAV_START)[0]
    indent = head[head.rfind("\n") + 1:]
    entries = "\n".join(f"{indent}- rules/{code}.md" for code in sorted(codes))
    return between(config, NAV_START, NAV_END, entries, SITE_CONFIG.name)


def main() -> int:
    from acclint.reports import render_rule_list, write_rule_pages
    from acclint.rules import all_rules

    rules = all_rules()
    write_rule_pages(rules, ROOT / "docs" / "rules")
    table = render_rule_list(rules, fmt="markdown")
    for page in TABLE_PAGES:
        page.write_text(readme_with_table(page.read_text("utf-8"), table, page.name), "utf-8")
    SITE_CONFIG.write_text(nav_with_rule_pages(SITE_CONFIG.read_text("utf-8"), [r.code for r in rules]), "utf-8")
    print(f"wrote docs/rules/ ({len(rules)} pages), the rule table of README.md and docs/rules.md, and the nav")
    return 0


if __name__ == "__main__":
    sys.exit(main())
