"""The HTML report in a real headless Chromium: what a migration lead sees and can do.

The report (conftest.py) covers every section. The page is opened from file:// as a user opens
it. Set ACCLINT_SCREENSHOT=docs/report.png to refresh the
README's screenshot from this suite's browser.
"""

from __future__ import annotations

import io
import os

import pytest

from acclint.rules import all_rules
from html_report_inputs import BENCHMARK_FILE, BENCHMARK_TEXT, line_of

RULES = all_rules()
VISIBLE_CARDS = "article.finding:not([hidden])"


@pytest.fixture
def watched(open_page, report):
    return open_page(report["url"])


def visible_cards(page) -> list[dict]:
    return page.eval_on_selector_all(VISIBLE_CARDS, "els => els.map(e => ({id: e.id, cat: e.dataset.cat, "
                                                    "sev: e.dataset.sev, file: e.dataset.file, text: e.textContent}))")


def test_opens_offline_without_console_errors_or_requests(watched, report):
    page = watched.page
    assert page.title().startswith("Migration readiness")
    assert page.eval_on_selector_all("script[src], link[href], img[src], iframe", "els => els.length") == 0
    page.keyboard.press("j")  # exercise the script, then look at what it logged
    page.fill("#search", "seed")
    page.wait_for_timeout(200)
    assert watched.page_errors == [] and watched.console_errors == []
    assert watched.requests == [report["url"]]  # the file itself, nothing else


def test_checklist_statuses_counts_and_reasons(watched, report):
    page = watched.page
    rows = page.eval_on_selector_all("#checklist tbody tr", """rows => rows.map(r => ({
        item: r.dataset.item, status: r.querySelector('.badge').textContent.trim(),
        counts: r.querySelector('.counts').textContent.trim(), reason: r.querySelector('.reason').textContent.trim(),
        evidence: r.querySelector('.evidence a').getAttribute('href')}))""")
    by_item = {row["item"]: row for row in rows}
    assert list(by_item)[:3] == ["seed", "determinism", "hyperparameter"] and list(by_item)[-1] == "runtime"
    warnings = sum(1 for f in report["result"].findings if f.category == "determinism" and f.severity == "warning")
    assert by_item["determinism"]["status"] == "fail" and f"{warnings} warnings" in by_item["determinism"]["counts"]
    assert by_item["hyperparameter"]["status"] == "fail" and "2 setup differences" in by_item["hyperparameter"]["counts"]
    assert by_item["hyperparameter"]["evidence"] == "#setup-diff"
    cause = report["runtime"]["first_cause"]["kind"]
    assert by_item["runtime"]["status"] == "fail" and f"first cause: {cause}" in by_item["runtime"]["reason"]
    installed = {rule.category for rule in RULES}
    for item in ("fused-op", "contiguity", "mixed-precision", "framework-default", "debug-tooling"):
        if item not in installed:
            assert by_item[item]["status"] == "not checked"
            assert "no rule of this family is installed" in by_item[item]["reason"]
    for row in rows:  # every evidence link points at something on the page
        assert page.locator(row["evidence"]).count() == 1
    score = int(page.get_attribute(".score-number", "data-score"))
    passed = sum(1 for row in rows if row["status"] == "pass")
    assert score == round(100 * passed / len(rows))
    assert "÷ all 9 checklist items" in page.inner_text("#formula")
    assert "broken.py" in page.inner_text("#errors")


def test_snippet_shows_numbered_lines_and_marks_the_span(watched, report):
    page = watched.page
    card = page.locator(f'article.finding[data-rule="ACL202"][data-file$="{BENCHMARK_FILE}"]')
    line = line_of(report["examples"] / BENCHMARK_FILE, BENCHMARK_TEXT)
    assert card.locator(".hit .ln").text_content().strip() == str(line)
    assert card.locator("mark").text_content() == BENCHMARK_TEXT
    numbers = [int(n) for n in card.locator(".ln").all_text_contents()]
    assert numbers == list(range(line - 2, line + 3))
    card.scroll_into_view_if_needed()
    assert card.locator("mark").is_visible() and card.locator("mark").bounding_box()["width"] > 20


def test_filters_and_search_change_what_is_visible_and_the_link_restores_them(watched, open_page):
    page = watched.page
    everything = visible_cards(page)
    assert len(everything) == page.locator("article.finding").count() > 5
    page.uncheck("#controls input[name=cat][value=determinism]")
    shown = visible_cards(page)
    assert shown and all(card["cat"] != "determinism" for card in shown)
    assert len(shown) == sum(1 for card in everything if card["cat"] != "determinism")
    assert page.locator("#item-determinism").is_hidden()
    page.uncheck("#controls input[name=sev][value=info]")
    assert all(card["sev"] != "info" for card in visible_cards(page))
    page.fill("#search", "PYTHONHASHSEED")
    page.wait_for_function("() => location.hash.includes('q=')")  # the search applies after a short pause in typing
    searched = visible_cards(page)
    assert searched and all("pythonhashseed" in card["text"].lower() for card in searched)
    assert "Showing" in page.inner_text("#shown")
    url = page.url
    assert "cat=" in url and "sev=" in url and "q=PYTHONHASHSEED" in url
    shared = open_page(url)  # the link, opened elsewhere, shows the same view
    assert [c["id"] for c in visible_cards(shared.page)] == [c["id"] for c in searched]
    assert shared.page.input_value("#search") == "PYTHONHASHSEED"
    page.click("#clear")
    assert len(visible_cards(page)) == len(everything)


def test_file_filter_shows_one_file(watched):
    page = watched.page
    files = [value for value in page.eval_on_selector_all("#file-filter option", "os => os.map(o => o.value)") if value]
    target = files[-1]
    page.select_option("#file-filter", target)
    shown = visible_cards(page)
    assert shown and {card["file"] for card in shown} == {target}


def test_keyboard_moves_between_findings_and_opens_the_rule_page(watched):
    page = watched.page
    ids = [card["id"] for card in visible_cards(page)]
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert page.get_attribute("article.finding.current", "id") == ids[1]
    page.keyboard.press("ArrowUp")
    assert page.get_attribute("article.finding.current", "id") == ids[0]
    assert f"at={ids[0]}" in page.url
    rule = page.get_attribute("article.finding.current", "data-rule")
    page.keyboard.press("r")
    dialog = page.locator("#rule-dialog")
    assert dialog.is_visible() and rule in dialog.inner_text()
    page.keyboard.press("Escape")
    assert dialog.is_hidden()


def test_rule_page_is_one_click_away(watched):
    page = watched.page
    link = page.locator("article.finding a.rule").first
    code = link.get_attribute("href").removeprefix("#rule-")
    link.click()
    dialog = page.locator("#rule-dialog")
    assert dialog.is_visible()
    text = dialog.inner_text()
    for section in ("What it does", "Why it matters", "How to fix"):
        assert section in text
    assert code in text


def test_diff_and_runtime_sections(watched, report):
    page = watched.page
    row = page.locator('#setup-diff tr[data-key="global-batch-size"] td')
    assert row.nth(5).inner_text() == "default"
    assert report["runtime"]["first_cause"]["kind"] in page.inner_text("#first-cause")
    assert page.locator("#runtime tr.stage").count() >= 5
    bars = page.locator("#runtime figure.chart svg g.bar.differs")
    assert bars.count() >= 1 and bars.first.locator("rect").bounding_box()["width"] > 0


def test_without_javascript_everything_is_shown_and_no_filters(open_page, report):
    page = open_page(report["url"], javascript=False).page
    assert page.locator("#controls").is_hidden()
    assert page.locator(VISIBLE_CARDS).count() == page.locator("article.finding").count() > 0
    assert page.locator("#item-seed").is_visible() and page.locator("#runtime").is_visible()


def test_print_layout_hides_the_controls_and_keeps_the_findings(watched):
    page = watched.page
    page.emulate_media(media="print")
    assert page.locator("#controls").is_hidden()
    assert page.locator("#checklist").is_visible()
    assert page.locator("article.finding").first.is_visible()


def test_screenshot_is_not_blank(watched, tmp_path):
    from PIL import Image

    png = watched.page.screenshot()
    image = Image.open(io.BytesIO(png)).convert("RGB")
    raw = image.tobytes()
    pixels = [tuple(raw[i:i + 3]) for i in range(0, len(raw), 3)]
    background = max(set(pixels[:: 97]), key=pixels[:: 97].count)
    inked = sum(1 for pixel in pixels[:: 7] if sum(abs(a - b) for a, b in zip(pixel, background)) > 60)
    assert inked / len(pixels[:: 7]) > 0.02, "the screenshot is (nearly) blank"
    assert len(set(pixels[:: 7])) > 50  # text, badges and colours, not a flat fill
    target = os.environ.get("ACCLINT_SCREENSHOT")
    if target:  # refresh the README's picture from this very browser, in 128 colours to keep the repository small
        image.quantize(colors=128).save(target, optimize=True)
