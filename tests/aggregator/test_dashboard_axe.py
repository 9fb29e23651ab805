"""The analysts' pages, checked by axe-core in Chromium at desktop and phone sizes.

Pages: a crosstab (two categorical questions), a means-by-category view (a number by a
choice) and a comparison of two surveys, on a survey with joinable submissions (each
posted as one submission, the way devices send them).  Expected: 0 violations of WCAG
2.0, 2.1 and 2.2 A and AA.  The stack (a gunicorn aggregator with the demo survey) is
respond_stack's; axe is injected as in test_respond_axe.py (skipped the same way without
axe-core or Chromium), and screenshots are written beside the respond page's.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest
import requests

from deniable.survey import Survey

from .conftest import random_answer
from .respond_stack import ENROLLED, SURVEY
from .test_respond_axe import _check_both, _context, axe_stack

pytestmark = [pytest.mark.browser, pytest.mark.slow]
RESPONDENTS = 40


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    yield from axe_stack(tmp_path_factory)


def _submit(base: str, respondents: int) -> None:
    """``respondents`` submissions of randomized reports to the public route (joinable)."""
    document = requests.get(f"{base}/api/v1/surveys/{SURVEY}", timeout=10).json()
    survey = Survey.from_dict(document["definition"], resolved=True)
    rng = np.random.default_rng(7)
    session = requests.Session()
    for _ in range(respondents):
        reports = [
            {
                "id": str(uuid.uuid4()),
                "question": q.id,
                "payload": q.randomize(random_answer(q, rng), rng),
            }
            for q in survey.questions
        ]
        sent = session.post(
            f"{base}/api/v1/surveys/{SURVEY}/reports", json={"reports": reports}, timeout=10
        )
        assert sent.status_code in (200, 201), sent.text


def test_crosstab_means_and_comparison_pages_have_no_wcag_22_aa_violation(stack) -> None:
    base, found = stack["base"], []
    _submit(base, RESPONDENTS)
    pages = {
        "crosstab": f"/surveys/{SURVEY}/crosstab?rows=commute&columns=burnout",
        "means": f"/surveys/{SURVEY}/crosstab?rows=commute&columns=overtime",
        "compare": f"/surveys/{SURVEY}/compare/{ENROLLED}",
        "compare-same": f"/surveys/{SURVEY}/compare/{SURVEY}",
    }
    context, page, _ = _context(stack)
    try:
        for name, path in pages.items():
            response = page.goto(base + path)
            assert response is not None and response.status == 200, (name, response)
            found += _check_both(page, name)
        for name, kind in (("means", "means"), ("crosstab", "joint")):  # what was checked
            page.goto(base + pages[name])
            assert page.locator("[data-kind]").get_attribute("data-kind") == kind
            assert page.locator("[data-n]").get_attribute("data-n") == str(RESPONDENTS)
    finally:
        context.close()
    assert found == [], "\n".join(found)


def test_the_survey_page_with_its_share_card_and_qr_code_has_no_wcag_22_aa_violation(
    stack,
) -> None:
    """The survey page's share card (link, embed snippet, QR code, response count) at both
    sizes; the QR code is an image with a name, and the SVG served for printing is the one
    segno draws of the link for respondents, under the dashboard's CSP."""
    from deniable.aggregator.dashboard import CONTENT_SECURITY_POLICY
    from deniable.aggregator.qr import qr_svg

    base = stack["base"]
    context, page, _ = _context(stack)
    try:
        response = page.goto(f"{base}/surveys/{SURVEY}")
        assert response is not None and response.status == 200
        found = _check_both(page, "survey-share")
        qr = page.get_by_role("img", name="QR code of the link for respondents", exact=False)
        assert qr.count() == 1
        respond = page.locator("#respond-link").inner_text()
        assert respond == f"{base}/surveys/{SURVEY}/respond"
        assert page.locator("#response-count").get_attribute("data-respondents") is not None
        href = page.locator("#qr-link").get_attribute("href")
    finally:
        context.close()
    assert found == [], "\n".join(found)
    served = requests.get(base + href, timeout=10)
    assert served.status_code == 200
    assert served.headers["Content-Type"].startswith("image/svg+xml")
    assert served.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert served.text == qr_svg(respond)
