"""The respond page's errors go as soon as they are fixed (docs/embedding.md: "an error
disappears once fixed"), in real Chromium against a served aggregator."""

from __future__ import annotations

import pytest

from .respond_stack import SURVEY, answer_burnout, answer_questionnaire, open_page, run_stack, state

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = "[data-deniable-survey]"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    yield from run_stack(tmp_path_factory)


def _marked(page, name: str) -> tuple[str, str | None, bool]:
    """(the field's error text, its first input's aria-invalid, whether its frame is red)."""
    return (
        page.inner_text(f"#{name}-error"),
        page.get_attribute(f"[aria-describedby='{name}-error']", "aria-invalid"),
        page.eval_on_selector(f"#{name}-set", "e => e.classList.contains('deniable-invalid')"),
    )


def test_an_error_disappears_once_fixed_without_resubmitting(stack) -> None:
    context, page, recorder = open_page(stack, viewport={"width": 390, "height": 844})
    try:
        page.goto(f"{stack['base']}/surveys/{SURVEY}/respond")
        state(page, "ready")
        answer_burnout(page)
        answer_questionnaire(page)  # "commute" and "tools" left as they are
        page.fill("#q-overtime", "99")  # out of range
        page.get_by_role("button", name="Randomize my answers").click()
        assert state(page, "errors", "review") == "errors"
        assert _marked(page, "q-commute") == ("Please answer this question.", "true", True)
        assert _marked(page, "q-overtime")[1:] == ("true", True)
        assert page.query_selector(f"{ROOT} .deniable-error") is not None

        page.get_by_label("Bicycle", exact=True).check()
        assert _marked(page, "q-commute") == ("", None, False)  # gone at once
        assert _marked(page, "q-overtime")[1:] == ("true", True)  # the other one stays
        page.fill("#q-overtime", "150")  # still wrong: still marked
        assert _marked(page, "q-overtime")[1:] == ("true", True)
        page.fill("#q-overtime", "")  # emptied: still wrong, now in other words
        assert _marked(page, "q-overtime")[0] == "Please answer this question."
        page.fill("#q-overtime", "3.5")
        assert _marked(page, "q-overtime") == ("", None, False)
        # Every error fixed: the summary above the form goes too.
        assert page.query_selector(f"{ROOT} .deniable-error") is None
        assert page.query_selector("[aria-invalid]") is None
        assert recorder.posts() == [], "fixing an answer sends nothing"
    finally:
        context.close()


def test_a_field_never_marked_is_not_marked_while_typing(stack) -> None:
    context, page, _ = open_page(stack)
    try:
        page.goto(f"{stack['base']}/surveys/{SURVEY}/respond")
        state(page, "ready")
        page.fill("#q-overtime", "99")  # wrong, but the respondent has not asked to go on yet
        assert _marked(page, "q-overtime") == ("", None, False)
    finally:
        context.close()
