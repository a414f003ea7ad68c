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
