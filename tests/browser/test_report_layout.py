"""The HTML report on a phone (390 px) and a desktop (1400 px), in print and off screen,
and what axe-core finds in it: layout and accessibility, in real Chromium (conftest.py).
"""

from __future__ import annotations

import pytest

PHONE, DESKTOP = (390, 844), (1400, 900)
FOLDED = "details.more article.finding"
UNFOLDED = "article.finding:not(details.more article)"

# The share of the viewport the filter bar covers once the page is scrolled to a finding.
BAR_SHARE = """() => {
  const rect = document.getElementById('controls').getBoundingClientRect();
  return Math.max(0, Math.min(rect.bottom, innerHeight) - Math.max(rect.top, 0)) / innerHeight;
}"""


@pytest.mark.parametrize("size", [PHONE, DESKTOP], ids=["390px", "1400px"])
def test_no_serious_or_critical_accessibility_violation(open_page, report, axe, size):
    page = open_page(report["url"], viewport=size).page
    assert axe(page) == []
    page.eval_on_selector_all("details.more", "els => els.forEach(e => { e.open = true; })")
    assert axe(page) == []  # the folded findings too


def test_the_page_never_scrolls_sideways_on_a_phone(open_page, report):
    page = open_page(report["url"], viewport=PHONE).page
    assert page.evaluate("document.scrollingElement.scrollWidth") <= PHONE[0]
    # Wide tables scroll inside their own box; the checklist wraps into one block per item.
    assert page.locator(".scroll").count() >= 4
    for box in page.eval_on_selector_all(".scroll, #checklist", "els => els.map(e => e.getBoundingClientRect().right)"):
        assert box <= PHONE[0]
    page.eval_on_selector_all("details.more", "els => els.forEach(e => { e.open = true; })")
    assert page.evaluate("document.scrollingElement.scrollWidth") <= PHONE[0]


@pytest.mark.parametrize("size, share", [(PHONE, 0.12), (DESKTOP, 0.25)], ids=["390px", "1400px"])
def test_the_filter_bar_leaves_the_findings_room(open_page, report, size, share):
    page = open_page(report["url"], viewport=size).page
    page.locator("article.finding").last.scroll_into_view_if_needed()
    assert page.evaluate(BAR_SHARE) <= share


def test_paths_in_the_diff_table_break_at_slashes_only(open_page, report):
    page = open_page(report["url"], viewport=DESKTOP).page
    # Each text node between two <wbr> is one name of the path: one line box, never split into letters.
    split = page.eval_on_selector_all("#setup-diff td.where", """cells => cells.flatMap(cell =>
        Array.from(cell.childNodes).filter(n => n.nodeType === 3 && n.textContent.length > 1).map(n => {
          const range = document.createRange(); range.selectNodeContents(n);
          return [n.textContent, range.getClientRects().length];
        })).filter(([, lines]) => lines !== 1)""")
    assert page.locator("#setup-diff td.where").count() >= 3 and split == []


def test_repeats_of_a_rule_are_folded_and_open_on_demand(open_page, report):
    page = open_page(report["url"]).page
    total = page.locator("article.finding").count()
    folded = page.locator(FOLDED)
    assert folded.count() > 0 and page.locator(UNFOLDED).count() + folded.count() == total
    assert not folded.first.is_visible()
    assert page.locator("#by-rule tbody tr").count() == page.locator("#findings .rule-group").count()
    summary = page.locator("details.more > summary").first
    summary.focus()
    page.keyboard.press("Enter")  # a keyboard opens a fold
    assert page.locator("details.more").first.evaluate("e => e.open")
    assert folded.first.is_visible()


def test_search_and_keys_reach_folded_findings(open_page, report):
    page = open_page(report["url"]).page
    folded_file = page.locator(FOLDED).last.get_attribute("data-file")
    page.select_option("#file-filter", folded_file)
    shown = page.locator("article.finding:not([hidden])")
    assert shown.count() > 0 and all(card.is_visible() for card in shown.all())
    page.click("#clear")
    assert page.locator("details.more[open]").count() == 0  # folded again once the filter is gone
    last = page.locator("article.finding").count()
    for _ in range(last):
        page.keyboard.press("j")
    assert page.locator("article.finding.current").is_visible()


def test_no_card_is_left_unpainted_off_screen(open_page, report):
    page = open_page(report["url"], viewport=DESKTOP).page
    # content-visibility: auto skips painting a card's contents off screen, which full-page captures
    # then show blank; every card outside a closed fold must be painted wherever the page is scrolled.
    skipped = page.eval_on_selector_all(UNFOLDED, """els => els.filter(e =>
        !e.querySelector('.msg').checkVisibility({contentVisibilityAuto: true})).map(e => e.id)""")
    assert page.locator(UNFOLDED).count() > 10 and skipped == []


def test_print_shows_every_card_folded_ones_too(open_page, report):
    page = open_page(report["url"]).page
    page.emulate_media(media="print")
    heights = page.eval_on_selector_all("article.finding", "els => els.map(e => e.getBoundingClientRect().height)")
    assert heights and min(heights) > 20
    assert page.locator("details.more > summary").first.is_hidden()


def test_tab_stops_have_distinct_names(open_page, report):
    page = open_page(report["url"]).page
    names = page.eval_on_selector_all("#checklist a", "links => links.map(a => a.textContent.trim())")
    assert len(names) == 9 and len(set(names)) == len(names)
    # Scrolling boxes (code, wide tables) are reachable by keyboard and say what they hold.
    unnamed = page.eval_on_selector_all("pre, .scroll", """els => els.filter(e => e.tabIndex !== 0 ||
        !(e.getAttribute('aria-label') || '').trim()).length""")
    assert unnamed == 0
