"""Every state of the respond page, checked by axe-core in Chromium at desktop and phone sizes.

States: landing, errors, review, sent, already answered, queued, refused (and the ε page),
and a relayed survey's landing in English and German, its errors and review in English.
Expected: 0 violations of WCAG 2.0, 2.1 and 2.2 A and AA.  Each state is also written as a
full-page screenshot to build/screenshots/respond/ (ignored by git; DENIABLE_SCREENSHOTS
changes the folder), for people to look at.

axe-core is a dev dependency installed by npm (``npm ci --prefix .ci/node``, which .ci/run
does) into .ci/node/node_modules, never committed.  Without it the module is skipped, unless
DENIABLE_REQUIRE_BROWSER=1 (then it fails).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import requests

from .respond_stack import (
    GERMAN,
    GERMAN_ONLY,
    RELAYED,
    REQUIRED,
    SURVEY,
    fill,
    host_page,
    open_page,
    queue_offline,
    run_stack,
    state,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT_DIR = Path(__file__).resolve().parents[2]
AXE = Path(
    os.environ.get("DENIABLE_AXE_PATH", ROOT_DIR / ".ci/node/node_modules/axe-core/axe.min.js")
)
SHOTS = Path(os.environ.get("DENIABLE_SCREENSHOTS", ROOT_DIR / "build/screenshots/respond"))
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
SIZES = {"desktop": (1280, 800), "phone": (390, 844)}


def axe_stack(tmp_path_factory):
    """A served aggregator for axe checks: fails (CI) or skips without axe-core."""
    if not AXE.exists():
        reason = f"axe-core is not installed at {AXE} (npm ci --prefix .ci/node)"
        if REQUIRED:
            pytest.fail(f"DENIABLE_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    SHOTS.mkdir(parents=True, exist_ok=True)
    yield from run_stack(tmp_path_factory)


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    yield from axe_stack(tmp_path_factory)


def _check(page, size: str, name: str) -> list[str]:
    """axe's violations of the page as it is now (one line each), after its screenshot."""
    page.screenshot(path=str(SHOTS / f"{name}-{size}.png"), full_page=True)
    run = "tags => axe.run(document, {runOnly: {type: 'tag', values: tags}})"
    result = page.evaluate(run, TAGS)
    assert len(result["passes"]) >= 5, name  # axe ran, and checked something
    return [
        f"{name}/{size}: {v['id']} ({v['impact']}): "
        + "; ".join(json.dumps(n["target"]) for n in v["nodes"])
        for v in result["violations"]
    ]


def _context(stack, **options):
    context, page, recorder = open_page(stack, **options)
    context.add_init_script(path=str(AXE))  # by the browser's debugger: outside the page's CSP
    return context, page, recorder


def _check_both(page, name: str) -> list[str]:
    """The state as it is now, at each size (the same page resized: one flow per state)."""
    found = []
    for size, (width, height) in SIZES.items():
        page.set_viewport_size({"width": width, "height": height})
        found += _check(page, size, name)
    return found


def test_every_state_has_no_wcag_22_aa_violation(stack) -> None:
    base, found = stack["base"], []
    respond = f"{base}/surveys/{SURVEY}/respond"
    context, page, _ = _context(stack)
    try:
        page.goto(respond)
        state(page, "ready")
        found += _check_both(page, "landing")
        page.get_by_role("button", name="Randomize my answers").click()
        state(page, "errors")
        found += _check_both(page, "errors")
        fill(page)
        page.get_by_role("button", name="Randomize my answers").click()
        state(page, "review")
        found += _check_both(page, "review")
        page.get_by_role("button", name="Send these noisy values").click()
        assert state(page, "sent", "queued") == "sent"
        found += _check_both(page, "sent")
        page.reload()
        state(page, "answered")
        found += _check_both(page, "already-answered")
        page.goto(f"{base}/about/epsilon")
        found += _check_both(page, "epsilon")
    finally:
        context.close()
    context, page, _ = _context(stack)
    try:  # offline: the batch waits on the device
        page.goto(respond)
        state(page, "ready")
        queue_offline(context, page)
        found += _check_both(page, "queued")
        context.set_offline(False)
        # refused: a survey whose signature does not verify (a tampered definition)
        page.route(
            f"{base}/api/v1/surveys/{SURVEY}",
            lambda route: route.fulfill(
                response=(r := route.fetch()), body=r.text().replace("burnt out", "burned out")
            ),
        )
        page.goto(respond)
        state(page, "refused")
        found += _check_both(page, "refused")
    finally:
        context.close()
    site, original = stack["allowed"], stack["allowed"].page
    german = requests.get(f"{base}/surveys/{SURVEY}/embed?lang=de", timeout=10).text
    site.page = host_page(german, lang="de")
    context, page, _ = _context(stack, locale="de-DE")
    try:  # the other language, embedded in another site's page
        page.goto(site.origin + "/")
        state(page, "ready")
        page.get_by_role("button", name="Meine Antworten zufällig verändern").click()
        state(page, "errors")
        found += _check_both(page, "embed-de-errors")
    finally:
        context.close()
        site.page = original
    assert found == [], "\n".join(found)


def test_a_relayed_surveys_page_has_no_wcag_22_aa_violation(stack) -> None:
    found, said = [], {"en": "at least 1,000", "de": "mindestens 1.000"}
    for lang, locale in (("en", "en-US"), ("de", "de-DE")):
        words, name = said[lang], "relayed" if lang == "en" else f"relayed-{lang}"
        context, page, _ = _context(stack, locale=locale)
        try:
            page.goto(f"{stack['base']}/surveys/{RELAYED}/respond?lang={lang}")
            state(page, "ready")
            # the relay passage stays once the form is mounted, next to the introduction
            passage = page.locator(".deniable-relay")
            assert passage.is_visible() and words in passage.inner_text()
            assert "relay.example.org" in passage.inner_text()
            found += _check_both(page, f"{name}-landing")
            if lang != "en":  # fill() reads the English labels
                continue
            randomize = page.get_by_role("button", name="Randomize my answers")
            randomize.click()
            state(page, "errors")
            found += _check_both(page, f"{name}-errors")
            fill(page)
            randomize.click()
            state(page, "review")
            assert page.locator(".deniable-relay").is_visible()  # still there to review by
            found += _check_both(page, f"{name}-review")
        finally:
            context.close()
    assert found == [], "\n".join(found)


def test_a_german_survey_s_page_has_no_violation_and_marks_its_language(stack) -> None:
    """A German survey in German (its own language, and the words' default), then in an English
    page: translated, all English; untranslated, its German text marked lang="de" (WCAG 3.1.2)."""
    found, base = [], stack["base"]
    context, page, _ = _context(stack, locale="fr-FR")  # a language neither has: the survey's
    try:
        page.goto(f"{base}/surveys/{GERMAN}/respond")
        state(page, "ready")
        assert page.locator("html").get_attribute("lang") == "de"
        assert page.locator("legend").first.inner_text() == "Sind Sie froh?"
        languages = "() => [...document.querySelectorAll('[lang]')].map((e) => e.lang)"
        assert set(page.evaluate(languages)) == {"de"}  # one language throughout
        found += _check_both(page, "german-landing")
    finally:
        context.close()
    context, page, _ = _context(stack, locale="en-US")
    try:
        page.goto(f"{base}/surveys/{GERMAN}/respond")
        state(page, "ready")
        assert page.locator("h1").inner_text() == "Happiness at work"
        assert page.get_by_label("green").count() == 1 and page.locator("[lang=de]").count() == 0
        # The review reads in the translation too: the questions and the noisy values' labels.
        page.get_by_label("Yes", exact=True).check()
        page.get_by_label("green", exact=True).check()
        page.get_by_label("Prefer not to say").check()
        page.get_by_role("button", name="Randomize my answers").click()
        state(page, "review")
        terms = page.locator(".deniable-review dt").all_inner_texts()
        assert terms == ["Are you happy?", "Which colour?", "How satisfied?", "Which sport?"]
        colour = page.locator(".deniable-review dd.deniable-value").nth(1).inner_text()
        assert colour in ("red", "green", "blue"), colour
        page.goto(f"{base}/surveys/{GERMAN_ONLY}/respond")
        state(page, "ready")
        assert page.locator("html").get_attribute("lang") == "en"
        marked = page.locator("[lang=de]")
        texts = set(marked.all_inner_texts())
        assert {"Glück bei der Arbeit", "Sind Sie froh?", "grün", "Welche Farbe?"} <= texts
        assert "Die erste, die Ihnen einfällt." in texts and "1 = gar nicht" in texts
        assert page.get_by_label("Yes").count() == 1  # the form's words stay English
        found += _check_both(page, "german-in-english")
    finally:
        context.close()
    assert found == [], "\n".join(found)
