"""The HTML migration-readiness report: ONE self-contained file (CSS, JS and pictures inline).

`render_html(report)` lays out an html_model.Report with the jinja2 templates shipped in
reports/templates/; `html_report(...)` builds that model from a scan result (and optionally a
diff dict and a runtime view) and renders it, for `acclint scan --format html` and `acclint report`.
A Content-Security-Policy forbids every fetch, so opening the file can never reach the network.
"""

from __future__ import annotations

from datetime import datetime, timezone
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Optional, Sequence, Union

from jinja2 import Environment, PackageLoader, StrictUndefined

from acclint import __version__
from acclint.findings import ScanResult
from acclint.linter.rulebase import Rule
from acclint.reports.html_model import Found, Report, ScanScope, breakable, build_report, inline
from acclint.reports.json_report import report_dict
from acclint.reports.sources import SourceCache


@lru_cache(maxsize=1)
def _environment() -> Environment:
    env = Environment(loader=PackageLoader("acclint.reports", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["inline"] = inline  # prose with `code` spans
    env.filters["breakable"] = breakable  # paths that wrap at their slashes
    return env


@lru_cache(maxsize=None)
def _asset(name: str) -> str:
    return resources.files("acclint.reports").joinpath("templates", name).read_text("utf-8")


def render_html(report: Report) -> str:
    template = _environment().get_template("report.html.j2")
    return template.render(r=report, css=_asset("report.css"), js=_asset("report.js"))


def html_report(
    result: Optional[ScanResult],
    rules: Sequence[Rule],
    *,
    active_codes: Optional[frozenset] = None,
    preview_codes: frozenset = frozenset(),
    base_dir: Union[str, Path, None] = None,
    paths: Sequence[str] = (),
    diff: Optional[dict] = None,
    runtime: Optional[dict] = None,
    command: str = "report",
) -> str:
    inputs = [("Scanned", " ".join(paths) or ".")]
    if diff is not None:
        inputs.append(("Setup diff", f"{diff.get('left', '')}  vs  {diff.get('right', '')}"))
    if runtime is not None:
        inputs.append(("Fingerprints", f"{runtime['left']}  vs  {runtime['right']}"))
    report = build_report(
        scan=report_dict(result) if result is not None else None,
        scope=ScanScope(list(rules), active_codes, preview_codes),
        sources=SourceCache(base_dir).lines,
        diff=diff,
        runtime=runtime,
        command=command,
        inputs=inputs,
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        version=__version__,
        found=Found(result.programs, result.launch_scripts) if result is not None else None,
    )
    return render_html(report)
