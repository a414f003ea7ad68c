"""Real headless Chromium (Debian's /usr/bin/chromium) driven by Playwright, one per module.

In CI (CI=true) a missing browser or driver FAILS these tests: .ci/run installs both. Outside CI
they are skipped with the reason, so a checkout without a browser can still run the rest.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from acclint.config import Config
from acclint.linter.engine import scan
from acclint.reports.html import html_report
from acclint.reports.html_inputs import load_comparison
from acclint.reports.html_runtime import runtime_view
from acclint.rules import all_rules
from html_report_inputs import capture_fingerprints, copy_examples, diff_result

RECIPES = 7
CHROMIUM = os.environ.get("ACCLINT_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--no-first-run"]


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes", "on"}


def _unavailable(reason: str):
    if in_ci():
        pytest.fail(f"browser tests need {reason} (.ci/run installs it)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright for Python (pip install -e '.[test]')")
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        _unavailable(f"Chromium at {CHROMIUM} (apt-get install chromium chromium-driver)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def report(tmp_path_factory):
    """One report with every section: the bundled examples (plus copies of one recipe and an
    unreadable file), a setup diff in the shape of docs/formats.md, and two real torch fingerprints whose
    LayerNorm eps differs."""
    rules = all_rules()
    root = tmp_path_factory.mktemp("browser")
    copy_examples(root)
    for n in range(RECIPES):  # copies of one recipe: its findings repeat, and fold under their rule
        recipe = root / "examples" / "recipes" / f"recipe_{n}"
        shutil.copytree(root / "examples" / "gpu", recipe)
        for source in recipe.glob("*.*"):  # edited copies: byte-identical files would be one finding
            source.write_text(source.read_text(encoding="utf-8") + f"# recipe {n}\n", encoding="utf-8")
    capture_fingerprints(root)
    here = os.getcwd()
    os.chdir(root)  # relative paths, as a user running `acclint report examples` sees them
    try:
        examples = Path("examples")
        result = scan([examples], rules, Config(), jobs=1)
        runtime = runtime_view(*load_comparison(Path("gpu.json"), Path("npu.json")))
        page = html_report(result, rules, base_dir=root, paths=["examples"], diff=diff_result(examples),
                           runtime=runtime)
    finally:
        os.chdir(here)
    path = root / "report.html"
    path.write_text(page, encoding="utf-8")
    return {"path": path, "url": path.as_uri(), "result": result, "examples": root / "examples", "runtime": runtime}


@pytest.fixture(scope="module")
def axe():
    """axe(page) -> the serious and critical violations axe-core finds in the page, as
    (rule id, impact, first targets, why) tuples. axe-core comes from axe-playwright-python (the
    test extra), which bundles axe.min.js: nothing is fetched."""
    try:
        from axe_playwright_python.sync_playwright import Axe
    except ImportError:
        _unavailable("axe-core for Playwright (pip install -e '.[test]')")
    engine = Axe()

    def run(page) -> list:
        violations = engine.run(page).response["violations"]
        return [(v["id"], v["impact"], [n["target"] for n in v["nodes"][:3]], v["help"])
                for v in violations if v["impact"] in ("serious", "critical")]

    return run


@dataclass
class Watched:
    """What a page did besides rendering: console errors, script errors, requests."""

    page: object
    console_errors: list = field(default_factory=list)
    page_errors: list = field(default_factory=list)
    requests: list = field(default_factory=list)


@pytest.fixture
def open_page(browser):
    """open_page(url, javascript=True) -> Watched: a fresh context per page, closed after the test."""
    contexts = []

    def opener(url: str, *, javascript: bool = True, viewport=(1200, 900)) -> Watched:
        context = browser.new_context(java_script_enabled=javascript,
                                      viewport={"width": viewport[0], "height": viewport[1]})
        contexts.append(context)
        page = context.new_page()
        watched = Watched(page)
        page.on("console", lambda message: watched.console_errors.append(message.text)
                if message.type in ("error", "warning") else None)
        page.on("pageerror", lambda error: watched.page_errors.append(str(error)))
        page.on("request", lambda request: watched.requests.append(request.url))
        page.goto(url, wait_until="load")
        return watched

    yield opener
    for context in contexts:
        context.close()
