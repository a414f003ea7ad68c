"""Reporters: turn a `ScanResult` into text, JSON, GitHub annotations, SARIF or an HTML report.

The CLI calls `render(result, fmt, rules, **options)`; `FORMATS` lists what `--format` accepts.
Every renderer returns the report without a trailing newline (the CLI's echo adds it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Sequence, Tuple

from acclint import __version__
from acclint.findings import ScanResult
from acclint.linter.rulebase import Rule
from acclint.reports.github import render_github
from acclint.reports.json_report import render_json
from acclint.reports.rule_page import render_rule_list, render_rule_page, write_rule_pages
from acclint.reports.sarif import render_sarif
from acclint.reports.text import render_text

__all__ = [
    "DIFF_FORMATS",
    "FORMATS",
    "RenderOptions",
    "render",
    "render_diff",
    "render_github",
    "render_json",
    "render_rule_list",
    "render_rule_page",
    "render_sarif",
    "render_text",
    "write_rule_pages",
]


@dataclass(frozen=True)
class RenderOptions:
    """Options a format may use; each format ignores the ones that mean nothing to it."""

    color: bool = False  # text
    show_fix: bool = True  # text
    base_dir: Optional[str] = None  # sarif: project root, for relative URIs and fingerprints
    tool_version: str = __version__  # sarif
    information_uri: Optional[str] = None  # sarif
    active_codes: Optional[frozenset] = None  # html: the rules that ran (None: all given), for "not checked"
    preview_codes: frozenset = frozenset()  # html: the rules off only because they are preview
    paths: Tuple[str, ...] = ()  # html: what was scanned, for the report's header


Renderer = Callable[[ScanResult, Sequence[Rule], RenderOptions], str]


def _text(result: ScanResult, rules: Sequence[Rule], options: RenderOptions) -> str:
    return render_text(result, color=options.color, show_fix=options.show_fix)


def _json(result: ScanResult, rules: Sequence[Rule], options: RenderOptions) -> str:
    return render_json(result)


def _github(result: ScanResult, rules: Sequence[Rule], options: RenderOptions) -> str:
    return render_github(result, {rule.code: rule for rule in rules})


def _sarif(result: ScanResult, rules: Sequence[Rule], options: RenderOptions) -> str:
    return render_sarif(
        result,
        rules,
        tool_version=options.tool_version,
        base_dir=options.base_dir,
        information_uri=options.information_uri,
    )


def _html(result: ScanResult, rules: Sequence[Rule], options: RenderOptions) -> str:
    from acclint.reports.html import html_report  # jinja2 and the templates, only when asked for

    return html_report(result, rules, active_codes=options.active_codes, preview_codes=options.preview_codes,
                       base_dir=options.base_dir,
                       paths=options.paths, command="scan")


FORMATS: dict[str, Renderer] = {"text": _text, "json": _json, "github": _github, "sarif": _sarif, "html": _html}


DIFF_FORMATS = ("text", "json", "github")


def render_diff(result, fmt: str, *, color: bool = False) -> str:
    """Render an `acclint.setups.DiffResult` as text, json or github annotations."""
    from acclint.reports.diff_github import render_diff_github
    from acclint.reports.diff_json import render_diff_json
    from acclint.reports.diff_text import render_diff_text

    if fmt == "text":
        return render_diff_text(result, color=color)
    if fmt == "json":
        return render_diff_json(result)
    if fmt == "github":
        return render_diff_github(result)
    raise ValueError(f"unknown diff format {fmt!r}; expected one of {', '.join(DIFF_FORMATS)}")


def render(result: ScanResult, fmt: str, rules: Iterable[Rule] = (), **options) -> str:
    """Render `result` as `fmt`; `options` are `RenderOptions` fields (a typo raises TypeError)."""
    try:
        renderer = FORMATS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}") from None
    return renderer(result, list(rules), RenderOptions(**options))
