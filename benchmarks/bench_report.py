#!/usr/bin/env python3
"""Time the HTML report at scale in real headless Chromium: load to first paint, and a filter click.

A synthetic project of F files (default 1,000) with N findings (default 5,000) spread over the
checklist items, severities and files, each with a fix and real source lines around it, is
rendered by `acclint.reports.html.html_report` and opened from file:// in Debian's Chromium
(Playwright, /usr/bin/chromium), as a user opens it. Measured in one run:

1. render: building the page in Python (seconds) and its size;
2. first paint: `first-contentful-paint` of the report, against a baseline page holding the same
   findings as plain text (`acclint scan`'s text format in a <pre>), opened the same way;
3. filter response: from the click on a filter (or a search) to the frame after it is painted,
   measured inside the page (performance.now around the click, then two animation frames),
   against a baseline click on the same page that changes nothing (the frame floor).

Run from the repository root:

    PYTHONPATH=src python benchmarks/bench_report.py [--findings N] [--files F] [--repeat R] [--json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from html import escape
from pathlib import Path

from acclint.findings import CATEGORIES, SEVERITIES, Finding, ScanResult
from acclint.reports.html import html_report
from acclint.reports.text import render_text
from acclint.rules import all_rules

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--no-first-run"]
# Targets: a response within 100 ms reads as instant (RAIL); the page should paint within a second.
FILTER_TARGET_MS = 100.0
PAINT_TARGET_MS = 1000.0

SOURCE = '''import torch
import numpy as np


class Block{n}(torch.nn.Module):
    def __init__(self, width: int = {width}) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(width, width)
        self.norm = torch.nn.LayerNorm(width, eps=1e-5)
        self.drop = torch.nn.Dropout(p=0.1)

    def forward(self, x):
        h = self.fc(x).t()
        h = torch.nn.functional.gelu(h.t())
        return self.drop(self.norm(h))


def train_step(model, batch, optimizer):
    torch.backends.cudnn.benchmark = True
    noise = np.random.rand(4)
    loss = model(batch).pow(2).mean() + float(noise.sum()) * 0.0
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss.item()
'''


def make_corpus(root: Path, files: int, findings: int) -> ScanResult:
    """`files` source files and `findings` findings over them, every category and severity."""
    rules = all_rules()
    by_category = {rule.category: rule for rule in rules}
    paths = []
    for index in range(files):
        path = root / f"pkg{index % 37:02d}" / f"module_{index:04d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(SOURCE.format(n=index, width=16 + index % 64), encoding="utf-8")
        paths.append(path)
    lines = SOURCE.splitlines()
    result = ScanResult(files_scanned=files)
    for index in range(findings):
        category = CATEGORIES[index % len(CATEGORIES)]
        rule = by_category.get(category)
        code = rule.code if rule else f"ACL{(CATEGORIES.index(category) + 1) * 100 + 1}"
        line = 5 + (index * 7) % (len(lines) - 6)
        text = lines[line - 1]
        start = len(text) - len(text.lstrip()) + 1
        result.findings.append(Finding(
            rule=code, category=category, severity=SEVERITIES[index % len(SEVERITIES)],
            path=str(paths[index % files]), line=line, column=start, end_line=line, end_column=len(text) + 1,
            message=f"finding {index}: {category} problem on this line (synthetic, for timing)",
            fix="torch.backends.cudnn.benchmark = False" if index % 2 else "call `torch.manual_seed(seed)` first",
        ))
    return result


def baseline_page(result: ScanResult) -> str:
    """The same findings as plain text: the least a browser must paint for them."""
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>baseline</title></head><body><pre>"
            + escape(render_text(result)) + "</pre></body></html>")


FIRST_PAINT = """() => new Promise(resolve => {
    const done = () => {
        const entry = performance.getEntriesByName('first-contentful-paint')[0];
        if (entry) resolve(entry.startTime); else requestAnimationFrame(done);
    };
    done();
})"""

# Click `selector` (or change the search box), then wait two frames: the second frame starts after
# the first was painted, so the time covers the script, style, layout and paint of the change.
CLICK = """async ([selector, query]) => {
    const frames = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
    await frames();
    const t0 = performance.now();
    if (query === null) {
        document.querySelector(selector).click();
    } else {
        const box = document.querySelector(selector);
        box.value = query;
        box.form.dispatchEvent(new Event('change', {bubbles: true}));
    }
    await frames();
    return performance.now() - t0;
}"""


def measure(browser, url: str, actions: list[tuple[str, str, object]]) -> dict:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    started = time.perf_counter()
    page.goto(url, wait_until="load")
    load_wall = (time.perf_counter() - started) * 1000
    out = {"first_paint_ms": page.evaluate(FIRST_PAINT), "load_event_ms": page.evaluate(
        "() => performance.getEntriesByType('navigation')[0].loadEventEnd"), "goto_wall_ms": load_wall}
    if actions:
        page.wait_for_timeout(1000)  # a user's first second: the page reads the cards' text for search while idle
    for name, selector, query in actions:
        out[name] = page.evaluate(CLICK, [selector, query])
    page.close()
    return out


def run(findings: int, files: int, repeat: int) -> dict:
    from playwright.sync_api import sync_playwright

    runs = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        root = Path(tmp)
        result = make_corpus(root / "project", files, findings)
        started = time.perf_counter()
        page = html_report(result, all_rules(), base_dir=root, paths=["project"])
        render_s = time.perf_counter() - started
        report = root / "report.html"
        report.write_text(page, encoding="utf-8")
        baseline = root / "baseline.html"
        baseline.write_text(baseline_page(result), encoding="utf-8")
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        # Each action starts from the state the previous one left: a user's sequence of clicks.
        actions = [
            ("noop_click_ms", "#findings-h", None),  # a click that changes nothing: the frame floor
            ("filter_category_ms", "#controls input[name=cat]", None),
            ("filter_severity_ms", "#controls input[name=sev][value=info]", None),
            ("search_ms", "#search", "module_0042"),
            ("clear_ms", "#clear", None),
        ]
        for _ in range(repeat):
            base = measure(browser, baseline.as_uri(), [])
            mine = measure(browser, report.as_uri(), actions)
            runs.append({"baseline_first_paint_ms": base["first_paint_ms"], **mine})
        browser.close()
        size = report.stat().st_size
        baseline_size = baseline.stat().st_size

    def median(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    summary = {key: round(median(key), 1) for key in runs[0]}
    filters = [summary[k] for k in ("filter_category_ms", "filter_severity_ms", "search_ms", "clear_ms")]
    summary.update({
        "findings": findings, "files": files, "repeat": repeat,
        "render_s": round(render_s, 2), "report_bytes": size, "baseline_bytes": baseline_size,
        "first_paint_ratio": round(summary["first_paint_ms"] / summary["baseline_first_paint_ms"], 2),
        "worst_filter_ms": max(filters),
        "worst_filter_ratio_to_floor": round(max(filters) / max(summary["noop_click_ms"], 1e-3), 2),
        "machine": f"{platform.machine()}, Python {platform.python_version()}",
        "runs": runs,
    })
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--findings", type=int, default=5000)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        print(f"bench_report: needs Chromium at {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
        return 2
    s = run(args.findings, args.files, args.repeat)
    if args.json:
        print(json.dumps(s, indent=2))
        return 0
    print(f"{s['findings']:,} findings over {s['files']:,} files; medians of {s['repeat']} runs ({s['machine']})")
    print(f"render in Python          {s['render_s']:.2f} s, {s['report_bytes'] / 1e6:.1f} MB "
          f"(baseline text page {s['baseline_bytes'] / 1e6:.1f} MB)")
    print(f"first contentful paint    {s['first_paint_ms']:.0f} ms (baseline {s['baseline_first_paint_ms']:.0f} ms, "
          f"ratio {s['first_paint_ratio']:.2f}x; target < {PAINT_TARGET_MS:.0f} ms); load event {s['load_event_ms']:.0f} ms")
    print(f"frame floor (no-op)       {s['noop_click_ms']:.1f} ms")
    for key, label in (("filter_category_ms", "uncheck a checklist item"), ("filter_severity_ms", "uncheck a severity"),
                       ("search_ms", "search"), ("clear_ms", "clear filters")):
        print(f"{label:<26}{s[key]:.1f} ms")
    print(f"worst filter              {s['worst_filter_ms']:.1f} ms ({s['worst_filter_ratio_to_floor']:.2f}x the frame floor; "
          f"target < {FILTER_TARGET_MS:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
