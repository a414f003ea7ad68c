#!/usr/bin/env python3
"""Regenerate the documentation that is derived from the rules: docs/rules/*.md and the README's rule table.

    PYTHONPATH=src python tools/gen_docs.py

Run it after adding or changing a rule, or after benchmarks/precision/measure.py --write-table
(maturity and precision show in both). tests/rules/test_rule_docs.py fails while either is stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
START, END = "<!-- rule-table:start (tools/gen_docs.py) -->", "<!-- rule-table:end -->"


def readme_with_table(readme: str, table: str) -> str:
    """The README with the text between the markers replaced by `table`."""
    head, found, rest = readme.partition(START)
    _, found_end, tail = rest.partition(END)
    if not (found and found_end):
        raise SystemExit(f"README.md lacks the markers {START} ... {END}")
    return f"{head}{START}\n{table}\n{END}{tail}"


def main() -> int:
    from acclint.reports import render_rule_list, write_rule_pages
    from acclint.rules import all_rules

    rules = all_rules()
    write_rule_pages(rules, ROOT / "docs" / "rules")
    README.write_text(readme_with_table(README.read_text("utf-8"), render_rule_list(rules, fmt="markdown")), "utf-8")
    print(f"wrote docs/rules/ ({len(rules)} pages) and the README's rule table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
