"""The dashboard on a phone, in real Chromium: it reflows at 390 px, never shrinks its text
below 12 px (the SVG charts included, measured as drawn), and says times in words.

Screenshots of the index and the survey page at desktop and phone sizes go beside the
respond page's (build/screenshots/respond/, see test_respond_axe.py), for people to look at.
"""

from __future__ import annotations

import re

import pytest
import requests

from .respond_stack import SURVEY
from .test_dashboard import assert_page_matches_results
from .test_dashboard_axe import _submit
from .test_respond_axe import SIZES, _check_both, _context, axe_stack

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# The rendered size of every text node's element: its font size times the scale it is drawn
# at (an SVG drawn narrower than its viewBox shrinks its text with it).
SMALLEST_TEXT = """() => {
  const sizes = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode, element = node.parentElement;
    if (!node.textContent.trim() || !element || element.closest("title, desc")) continue;
    const box = element.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;
    const scale = element.getScreenCTM ? element.getScreenCTM().a : 1;
    sizes.push([parseFloat(getComputedStyle(element).fontSize) * scale, node.textContent.trim()]);
  }
  sizes.sort((a, b) => a[0] - b[0]);
  return sizes[0];
}"""
OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
RAW_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d")


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    yield from axe_stack(tmp_path_factory)


def test_dashboard_reflows_on_a_phone_with_readable_text(stack) -> None:
    """The index and the demo survey's page (a 0-10 scale with its mean and net promoter
    score, an optional and a conditional question with their words) at both sizes: axe,
    no overflow, no text under 12 px, and the numbers the browser shows are the JSON's."""
    base, found = stack["base"], []
    _submit(base, 30)
    results = requests.get(f"{base}/api/v1/surveys/{SURVEY}/results", timeout=10).json()
    context, page, _ = _context(stack)
    try:
        for name, path in (("dashboard-index", "/"), ("dashboard-survey", f"/surveys/{SURVEY}")):
            response = page.goto(base + path)
            assert response is not None and response.status == 200
            found += _check_both(page, name)  # axe at both sizes, with screenshots
            for width, height in SIZES.values():
                page.set_viewport_size({"width": width, "height": height})
                assert page.evaluate(OVERFLOW) <= 0, f"{name} overflows at {width} px"
                smallest, text = page.evaluate(SMALLEST_TEXT)
                assert smallest >= 12 - 0.01, f"{name} at {width} px: {text!r} is {smallest} px"
            shown = page.inner_text("body")
            assert not RAW_TIMESTAMP.search(shown), "times are said in words"
        # What was measured: the scale as a scale, and the optional questions' words.
        scale = page.locator("#q-recommend")
        assert scale.locator("svg.chart.columns g.bar").count() == 11
        assert (
            scale.locator("svg.mean-chart").count() == scale.locator("svg.nps-chart").count() == 1
        )
        assert scale.locator("ol.points li").count() == 11
        assert "Prefer not to say" in page.locator("#q-harassment .nonresponse").inner_text()
        assert "Asked of" in page.locator("#q-burnout_cause .nonresponse").inner_text()
        assert page.locator("#q-burnout g.bar > text").all_text_contents()[::2] == ["No", "Yes"]
        assert_page_matches_results(page.content(), results)
    finally:
        context.close()
    assert found == [], "\n".join(found)


def test_times_are_in_words_with_the_exact_time_on_hover(stack) -> None:
    context, page, _ = _context(stack)
    try:
        page.goto(stack["base"] + "/")
        times = page.query_selector_all("#surveys time")
        assert times, "each survey's creation time is a <time>"
        for element in times:
            assert RAW_TIMESTAMP.match(element.get_attribute("datetime"))
            assert element.get_attribute("title")  # the exact time, on hover
            assert re.search(r"ago|just now|UTC", element.inner_text())
    finally:
        context.close()
