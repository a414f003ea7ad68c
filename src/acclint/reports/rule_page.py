"""Rule documentation: the `acclint rules` table, one page per rule, and `docs/rules/*.md`.

A page is built once as a list of sections and then written as text, markdown or JSON, so the
three views (and the SARIF help, which reuses the markdown) always carry the same content.
"""

from __future__ import annotations

import inspect
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Union

from acclint.findings import CATEGORIES
from acclint.linter.maturity import MIN_JUDGED, maturity, measured, measured_proven
from acclint.linter.rulebase import Example, Rule
from acclint.reports.common import rule_title

RULE_LIST_FORMATS = ("text", "json", "markdown")
RULE_PAGE_FORMATS = ("text", "markdown", "json")

_LANGUAGES = {
    ".py": "python",
    ".sh": "bash",
    ".bash": "bash",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".json": "json",
    ".cfg": "ini",
    ".ini": "ini",
}


# --- the rule table ---------------------------------------------------------------------------


def ordered_rules(rules: Iterable[Rule]) -> list[Rule]:
    """Grouped by category in CATEGORIES order (unknown ones last), by code within a group."""

    def key(rule: Rule):
        rank = CATEGORIES.index(rule.category) if rule.category in CATEGORIES else len(CATEGORIES)
        return (rank, rule.category, rule.code)

    return sorted(rules, key=key)


def precision_text(rule: Rule) -> str:
    """The measured precision as a table cell: "96% of 48 judged", or "-" where nothing was judged."""
    figures = measured(rule.code)
    proven = measured_proven(rule.code)
    text = figures.describe() if figures else "-"
    return f"{text}; proven {proven.describe()}" if proven else text


def _rule_row(rule: Rule) -> dict:
    return {
        "code": rule.code,
        "name": rule.name,
        "category": rule.category,
        "severity": rule.severity,
        "maturity": maturity(rule),
        "precision": precision_text(rule),
        "summary": rule.summary,
    }


def _maturity_line(rule: Rule) -> str:
    figures = measured(rule.code)
    state = maturity(rule)
    how = ("it runs by default" if state == "stable"
           else "it runs with --preview, preview = true, or when selected by its exact code")
    if figures is None:
        evidence = "not measured on the judged corpus yet"
    else:
        evidence = (f"measured precision {figures.describe()} warnings on the judged corpus "
                    f"({figures.right:.0f} right, {figures.wrong:.0f} wrong, {figures.debatable:.0f} debatable)")
        proven = measured_proven(rule.code)
        if proven is not None:
            evidence += (f"; its proven findings (every premise proven) {proven.describe()}, and they decide "
                         "its maturity once 5 are judged; unproven findings are info in a default run")
        elif figures.judged < MIN_JUDGED:
            evidence += f"; fewer than {MIN_JUDGED} judged, so the rule keeps its declared maturity"
    return f"{state.capitalize()}: {how}; {evidence}."


def render_rule_list(rules: Iterable[Rule], *, fmt: str = "text") -> str:
    rows = [_rule_row(rule) for rule in ordered_rules(rules)]
    if fmt == "json":
        return json.dumps(rows, indent=2, ensure_ascii=False)
    if fmt == "markdown":  # the README's rule table
        head = "| code | name | category | severity | maturity | precision | what |\n|---|---|---|---|---|---|---|"
        cells = ("code", "name", "category", "severity", "maturity", "precision", "summary")
        return "\n".join([head] + ["| " + " | ".join(r[c].replace("|", "\\|") for c in cells) + " |" for r in rows])
    if fmt != "text":
        raise ValueError(f"unknown rule list format {fmt!r}; expected one of {RULE_LIST_FORMATS}")
    columns = ("code", "name", "category", "severity", "maturity", "precision", "summary")
    # The summary is last and free-length, so it is not padded.
    widths = {c: max([len(c)] + [len(row[c]) for row in rows]) for c in columns[:-1]}

    def line(values: dict) -> str:
        cells = [values[c].ljust(widths[c]) for c in columns[:-1]] + [values["summary"]]
        return "  ".join(cells).rstrip()

    lines = [line({c: c.upper() for c in columns})]
    previous = None
    for row in rows:
        if previous is not None and row["category"] != previous:
            lines.append("")  # a blank line between category groups
        previous = row["category"]
        lines.append(line(row))
    return "\n".join(lines)


# --- one rule's page --------------------------------------------------------------------------


@dataclass(frozen=True)
class Prose:
    text: str


@dataclass(frozen=True)
class Code:
    source: str
    language: str
    filename: Optional[str] = None  # shown only when an example has several files


@dataclass(frozen=True)
class Bullets:
    items: tuple[str, ...]


Block = Union[Prose, Code, Bullets]


def _clean(text: str) -> str:
    # Docs are often triple-quoted and indented in the rule class.
    return inspect.cleandoc(text)


def _language(path: str) -> str:
    return _LANGUAGES.get(Path(path).suffix.lower(), "text")


def _example_blocks(example: Example) -> list[Block]:
    shown = example.shown()
    blocks: list[Block] = [Prose(_clean(example.title))] if example.title else []
    several = len(shown) > 1
    for path, source in shown.items():
        blocks.append(Code(source.rstrip("\n"), _language(path), path if several else None))
    return blocks


def page_sections(rule: Rule) -> list[tuple[str, list[Block]]]:
    """The page body, in ruff's order; sections without content are left out."""
    doc = rule.doc
    sections: list[tuple[str, list[Block]]] = [
        ("What it does", [Prose(_clean(doc.what))]),
        ("Why it matters", [Prose(_clean(doc.why))]),
    ]
    if rule.invalid:
        sections.append(("Example", _example_blocks(rule.invalid[0])))
    if rule.valid:
        sections.append(("Use instead", _example_blocks(rule.valid[0])))
    sections.append(("How to fix", [Prose(_clean(doc.fix))]))
    if doc.references:
        sections.append(("References", [Bullets(tuple(doc.references))]))
    return sections


def _fence(source: str) -> str:
    # A fence longer than any backtick run inside, so sources quoting markdown stay intact.
    longest = max((len(run) for run in re.findall(r"`+", source)), default=0)
    return "`" * max(3, longest + 1)


def _markdown_block(block: Block) -> str:
    if isinstance(block, Prose):
        return block.text
    if isinstance(block, Bullets):
        return "\n".join(f"- {item}" for item in block.items)
    fence = _fence(block.source)
    code = f"{fence}{block.language}\n{block.source}\n{fence}"
    return f"`{block.filename}`:\n\n{code}" if block.filename else code


def _text_block(block: Block) -> str:
    if isinstance(block, Prose):
        return block.text
    if isinstance(block, Bullets):
        return "\n".join(f"  - {item}" for item in block.items)
    code = "\n".join(f"    {line}".rstrip() for line in block.source.splitlines())
    return f"  {block.filename}:\n{code}" if block.filename else code


def markdown_body(rule: Rule, *, heading: str = "##") -> str:
    """The sections as markdown, without the title; also the SARIF rule help."""
    parts = []
    for title, blocks in page_sections(rule):
        parts.append(f"{heading} {title}")
        parts.extend(_markdown_block(block) for block in blocks)
    return "\n\n".join(parts)


def text_body(rule: Rule) -> str:
    parts = []
    for title, blocks in page_sections(rule):
        parts.append(f"{title}\n{'-' * len(title)}\n" + "\n\n".join(map(_text_block, blocks)))
    return "\n\n".join(parts)


def _example_json(examples: tuple[Example, ...]) -> Optional[dict]:
    if not examples:
        return None
    return {"title": examples[0].title, "files": examples[0].shown()}


def render_rule_page(rule: Rule, *, fmt: str = "text") -> str:
    title = rule_title(rule.code, rule.name)
    if fmt == "json":
        doc = rule.doc
        page = dict(_rule_row(rule), title=title)
        page.update(
            what=_clean(doc.what),
            why=_clean(doc.why),
            fix=_clean(doc.fix),
            references=list(doc.references),
            example=_example_json(rule.invalid),
            use_instead=_example_json(rule.valid),
        )
        return json.dumps(page, indent=2, ensure_ascii=False)
    if fmt == "markdown":
        meta = (f"**Category:** `{rule.category}` · **Default severity:** `{rule.severity}` · "
                f"**Maturity:** `{maturity(rule)}`")
        return "\n\n".join([f"# {title}", meta, _maturity_line(rule), rule.summary, markdown_body(rule)])
    if fmt == "text":
        meta = f"Category: {rule.category}    Default severity: {rule.severity}    Maturity: {maturity(rule)}"
        head = f"{title}\n{'=' * len(title)}"
        return "\n\n".join([head, meta, _maturity_line(rule), rule.summary, text_body(rule)])
    raise ValueError(f"unknown rule page format {fmt!r}; expected one of {RULE_PAGE_FORMATS}")


def write_rule_pages(rules: Iterable[Rule], directory: Union[str, Path]) -> list[Path]:
    """Write `<code>.md` for every rule into `directory` (e.g. docs/rules); return the paths.

    Pages of rules that no longer exist are left alone: deleting files is the caller's call.
    """
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for rule in ordered_rules(rules):
        path = target / f"{rule.code}.md"
        path.write_text(render_rule_page(rule, fmt="markdown") + "\n", encoding="utf-8")
        written.append(path)
    return written
