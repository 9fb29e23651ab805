"""The survey editor's server side, on both backends: sign-in, CSRF, drafts, publishing.

The browser walk (every page in Chromium, axe-core, screenshots) is test_editor_browser.py.
"""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from deniable.aggregator.editor.forms import QUESTIONNAIRE
from deniable.aggregator.editor.session import COOKIE
from deniable.survey import Survey

HOSTILE = '<script>alert("x")</script>&<img src=x onerror=alert(1)>'


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, page[:400]
    return found.group(1)


def sign_in(client, storage) -> str:
    """Sign in with a new operator token; the CSRF token of the session."""
    token = storage.create_operator_token("editor test")
    response = client.post("/editor/sign-in", data={"token": token})
    assert response.status_code == 303, response.text
    return csrf_of(client.get("/editor/").text)


def new_draft(client, csrf: str) -> str:
    response = client.post("/editor/drafts", data={"csrf": csrf})
    assert response.status_code == 303
    return response.headers["Location"].split("?")[0]


def add(client, draft: str, csrf: str, kind: str, **fields: str) -> Any:
    """Add a question of ``kind`` and save ``fields`` into it; the save's response."""
    added = client.post(f"{draft}/questions", data={"csrf": csrf, "type": kind})
    assert added.status_code == 303, added.text
    form = {"csrf": csrf, "type": kind, "epsilon": "1", **fields}
    return client.post(added.headers["Location"], data=form)


def build(client, draft: str, csrf: str, survey_id: str = "staff", title: str = "Staff") -> None:
    """A draft with one question of every basic type and its survey fields."""
    for kind, fields in (
        ("yes_no", {"id": "burnout", "text": "Burnt out?"}),
        ("single_choice", {"id": "commute", "text": "Commute?", "options": "Car\nBus\nBike"}),
        ("multiple_choice", {"id": "tools", "text": "Tools?", "options": "Mail\nChat"}),
        ("numeric", {"id": "hours", "text": "Hours?", "lo": "0", "hi": "20"}),
    ):
        assert add(client, draft, csrf, kind, **fields).status_code == 303
    saved = client.post(
        f"{draft}/survey",
        data={"csrf": csrf, "survey_id": survey_id, "title": title, "results_public": "public"},
    )
    assert saved.status_code == 303


def test_pages_need_an_operator_session_with_the_right_cookie(client, storage) -> None:
    assert client.get("/editor/").status_code == 302
    assert client.post("/editor/drafts", data={}).status_code == 401
    refused = client.post("/editor/sign-in", data={"token": "dno_not-a-token"})
    assert refused.status_code == 401 and "not a valid operator token" in refused.text
    limited = storage.create_operator_token("one survey", surveys=["other"])
    refused = client.post("/editor/sign-in", data={"token": limited})
    assert refused.status_code == 401 and "limited to some surveys" in refused.text
    token = storage.create_operator_token("editor")
    signed_in = client.post("/editor/sign-in", data={"token": token, "next": "//evil.example/"})
    assert signed_in.headers["Location"] == "/editor/"  # never off this site
    cookie = signed_in.headers["Set-Cookie"]
    assert f"{COOKIE}=" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert "Path=/editor" in cookie and "Secure" not in cookie  # plain http here
    assert token not in cookie
    page = client.get("/editor/")
    assert page.status_code == 200
    policy = page.headers["Content-Security-Policy"]
    assert "script-src 'self';" in policy and "default-src 'none'" in policy
    assert "unsafe-inline" not in policy.split("script-src", 1)[1].split(";")[0]
    assert "form-action 'self'" in policy and "frame-ancestors 'none'" in policy
    assert page.headers["Cache-Control"] == "no-store"
    # Signing out ends the session (a form post like any other: CSRF checked).
    assert client.post("/editor/sign-out", data={}).status_code == 403
    out = client.post("/editor/sign-out", data={"csrf": csrf_of(page.text)})
    assert out.status_code == 303 and f"{COOKIE}=;" in out.headers["Set-Cookie"]
    assert client.get("/editor/").status_code == 302
    client.post("/editor/sign-in", data={"token": token})
    assert client.get("/editor/").status_code == 200
    # Revoking the operator token ends its sessions at once.
    (found,) = [t for t in storage.list_operator_tokens() if t.label == "editor"]
    storage.revoke_operator_token(found.id)
    assert client.get("/editor/").status_code == 302


def test_the_cookie_is_secure_behind_tls(app_config, tmp_path) -> None:
    from deniable.aggregator import create_app

    app = create_app({**app_config, "PUBLIC_URL": "https://surveys.example.org"})
    storage = app.extensions["deniable.storage"]
    try:
        token = storage.create_operator_token("tls")
        response = app.test_client().post("/editor/sign-in", data={"token": token})
        assert "Secure" in response.headers["Set-Cookie"]
    finally:
        storage.close()


def test_forms_refuse_a_missing_csrf_token_and_a_cross_site_request(client, storage) -> None:
    csrf = sign_in(client, storage)
    draft = new_draft(client, csrf)
    before = client.get(draft).text
    for data, headers in (
        ({}, {}),  # no token
        ({"csrf": "wrong"}, {}),
        ({"csrf": csrf}, {"Origin": "https://evil.example"}),
        ({"csrf": csrf}, {"Sec-Fetch-Site": "cross-site"}),
    ):
        refused = client.post(f"{draft}/survey", data={**data, "title": "Changed"}, headers=headers)
        assert refused.status_code == 403, (data, headers)
        assert "Nothing was changed" in refused.text
        assert client.post("/editor/drafts", data=data, headers=headers).status_code == 403
    assert "Changed" not in client.get(draft).text and client.get(draft).text == before
    same_site = client.post(
        f"{draft}/survey",
        data={"csrf": csrf, "title": "Changed"},
        headers={"Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"},
    )
    assert same_site.status_code == 303


def test_hostile_labels_are_escaped_on_every_page(client, storage) -> None:
    csrf = sign_in(client, storage)
    draft = new_draft(client, csrf)
    saved = add(
        client, draft, csrf, "single_choice", id="q", text=HOSTILE, options=f"{HOSTILE}\nSafe"
    )
    assert saved.status_code == 303
    client.post(f"{draft}/survey", data={"csrf": csrf, "survey_id": "hostile", "title": HOSTILE})
    index = draft.rsplit("/", 1)[1]
    pages = [draft, f"{draft}/questions/0", "/editor/"]
    for path in pages:
        text = client.get(path).text
        assert "<script>alert" not in text and "<img src=x" not in text, path
        assert "&lt;script&gt;" in text, path
    assert client.post(f"{draft}/publish", data={"csrf": csrf}).status_code == 303
    text = client.get("/editor/surveys/hostile").text
    assert "<script>alert" not in text and "&lt;script&gt;" in text
    assert index not in client.get("/editor/").text  # the draft is gone


def test_validation_errors_are_shown_next_to_their_field(client, storage) -> None:
    csrf = sign_in(client, storage)
    draft = new_draft(client, csrf)
    refused = add(client, draft, csrf, "multiple_choice", id="tools", text="T?", options="Only")
    assert refused.status_code == 422
    assert 'id="options-problem"' in refused.text
    assert "Options: must be a list of 2 to 64 labels" in refused.text
    assert re.search(r'id="options"[^>]*aria-invalid="true"', refused.text)
    refused = client.post(
        f"{draft}/questions/0",
        data={"csrf": csrf, "type": "multiple_choice", "id": "tools", "text": "T?",
              "options": "A\nB", "epsilon": "-1"},
    )  # fmt: skip
    assert refused.status_code == 422 and 'id="epsilon-problem"' in refused.text
    refused = client.post(
        f"{draft}/questions/0",
        data={"csrf": csrf, "type": "multiple_choice", "id": "Bad Id", "text": "T?",
              "options": "A\nB", "epsilon": "1"},
    )  # fmt: skip
    assert 'id="id-problem"' in refused.text and "lower-case letters" in refused.text
    page = client.get(draft).text
    assert 'id="draft-problem"' in page and "[a-z0-9]" not in page


def test_build_reorder_remove_publish_and_copy_as_new(client, storage, app) -> None:
    csrf = sign_in(client, storage)
    draft = new_draft(client, csrf)
    build(client, draft, csrf)
    page = client.get(draft).text
    assert 'id="ready"' in page
    order = lambda: re.findall(r'data-question="([^"]+)"', client.get(draft).text)  # noqa: E731
    assert order() == ["burnout", "commute", "tools", "hours"]
    client.post(f"{draft}/questions/3/move", data={"csrf": csrf, "direction": "up"})
    assert order() == ["burnout", "commute", "hours", "tools"]
    client.post(f"{draft}/questions/0/move", data={"csrf": csrf, "direction": "down"})
    assert order() == ["commute", "burnout", "hours", "tools"]
    assert add(client, draft, csrf, "yes_no", id="extra", text="Extra?").status_code == 303
    client.post(f"{draft}/questions/4/remove", data={"csrf": csrf})
    assert order() == ["commute", "burnout", "hours", "tools"]
    published = client.post(f"{draft}/publish", data={"csrf": csrf})
    assert published.headers["Location"] == "/editor/surveys/staff?new=1"
    # The survey is what create-survey stores: signed per request by the aggregator's key.
    document = client.get("/api/v1/surveys/staff").json
    survey = Survey.from_dict(document["definition"], resolved=True)
    assert survey.question_ids == ["commute", "burnout", "hours", "tools"]
    key = client.get("/api/v1/key").json["public_key"]
    Ed25519PublicKey.from_public_bytes(base64.b64decode(key)).verify(
        base64.b64decode(document["signature"]), survey.canonical_bytes()
    )
    assert client.get(draft).status_code == 404  # published: no longer a draft
    # Nothing edits a published survey: its page only reads, and only "copy" posts.
    assert client.post("/editor/surveys/staff", data={"csrf": csrf}).status_code == 405
    assert client.post(f"{draft}/survey", data={"csrf": csrf, "title": "X"}).status_code == 404
    # Publishing the same id again is refused in words; "copy as new" takes the next id.
    copied = client.post("/editor/surveys/staff/copy", data={"csrf": csrf}).headers["Location"]
    page = client.get(copied).text
    assert 'value="staff-2"' in page
    client.post(f"{copied}/survey", data={"csrf": csrf, "survey_id": "staff", "title": "S"})
    refused = client.post(f"{copied}/publish", data={"csrf": csrf})
    assert refused.status_code == 409 and "exists already" in refused.text
    client.post(f"{copied}/survey", data={"csrf": csrf, "survey_id": "staff-2", "title": "S"})
    assert client.post(f"{copied}/publish", data={"csrf": csrf}).status_code == 303
    assert (
        client.get("/api/v1/surveys/staff-2").json["definition"]["questions"]
        == (document["definition"]["questions"])
    )


def test_advice_beside_epsilon_locally_and_through_a_relay(client, storage) -> None:
    from deniable.planner import best_respondents, plan

    csrf = sign_in(client, storage)
    draft = new_draft(client, csrf)
    saved = add(client, draft, csrf, "yes_no", id="q", text="Q?", epsilon="1", then="stay")
    needed = [
        best_respondents(plan("yes_no", epsilon=1.0, half_width=h), "binary_rr")
        for h in (0.05, 0.10)
    ]
    row = re.search(r'<tr id="advice-local">(.*?)</tr>', saved.text, re.S).group(1)
    assert re.findall(r"<td>([^<]*)<span", row) == [f"{n:,}" for n in needed]
    assert "binary randomized response" in saved.text and "advice-relayed" not in saved.text
    client.post(
        f"{draft}/survey",
        data={"csrf": csrf, "survey_id": "r", "title": "R", "relay_url": "https://relay.example",
              "min_batch": "5000", "shuffle_unit": "question"},
    )  # fmt: skip
    page = client.get(f"{draft}/questions/0").text
    row = re.search(r'<tr id="advice-relayed">(.*?)</tr>', page, re.S).group(1)
    assert re.findall(r"<td>([^<]*)<span", row) == [f"{max(n, 5000):,}" for n in needed]
    assert 'id="advice-relay-noise"' in page and 'id="relay-noise"' in client.get(draft).text


def test_preview_is_signed_by_the_drafts_own_key_and_stores_nothing(client, storage) -> None:
    csrf = sign_in(client, storage)
    draft = new_draft(client, csrf)
    build(client, draft, csrf, survey_id="pv")
    page = client.get(f"{draft}/preview?lang=de")
    assert page.status_code == 200 and '<html lang="de">' in page.text
    # The client keeps a throw-away ledger and sends nothing; the page says so, in German.
    assert 'data-deniable-preview=""' in page.text
    assert "Vorschau: Diese Seite funktioniert so" in page.text
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    base = re.search(r'data-deniable-aggregator="([^"]+)"', page.text).group(1)
    pinned = re.search(r'data-deniable-key="([^"]+)"', page.text).group(1)
    assert pinned != client.get("/api/v1/key").json["public_key"]
    document = client.get(f"{base}/api/v1/surveys/pv").json
    survey = Survey.from_dict(document["definition"], resolved=True)
    Ed25519PublicKey.from_public_bytes(base64.b64decode(pinned)).verify(
        base64.b64decode(document["signature"]), survey.canonical_bytes()
    )
    assert client.post(f"{base}/api/v1/surveys/pv/reports", json={}).status_code == 403
    about = client.get(f"{base}/about/epsilon?lang=de&survey=pv")  # the form's link
    assert about.status_code == 303 and about.headers["Location"].startswith("/about/epsilon?")
    wrong = base[:-4] + "xxxx"
    assert client.get(f"{wrong}/api/v1/surveys/pv").status_code == 404
    assert client.get("/api/v1/surveys/pv").status_code == 404  # nothing was published


@pytest.mark.skipif(not QUESTIONNAIRE, reason="this core has no optional, show_if or scale")
def test_optional_help_conditions_and_scales_from_the_form(client, storage) -> None:
    csrf = sign_in(client, storage)
    draft = new_draft(client, csrf)
    build(client, draft, csrf, survey_id="quest")
    saved = add(
        client, draft, csrf, "scale", id="calm", text="How calm?", points="7",
        anchor_low="Not at all", anchor_high="Very", optional="1", help="Think of last week.",
        show_if_question="burnout", show_if_operator="equals", show_if_value="Yes",
    )  # fmt: skip
    assert saved.status_code == 303, saved.text
    for fields in (
        {"show_if_question": "commute", "show_if_operator": "in", "show_if_value": "Car\nBus"},
        {"show_if_question": "tools", "show_if_operator": "includes", "show_if_value": "Chat"},
        {"show_if_question": "hours", "show_if_operator": "between", "show_if_value": "1, 5"},
        {"show_if_question": "calm", "show_if_operator": "between", "show_if_value": "2, 4"},
        {"show_if_json": '{"any": [{"question": "burnout", "equals": false},'
                         ' {"question": "calm", "in": [6, 7]}]}'},
    ):  # fmt: skip
        response = add(client, draft, csrf, "yes_no", id="extra", text="Extra?", **fields)
        assert response.status_code == 303, (fields, response.text[:2000])
        page = client.get(draft).text
        assert "shown when" in page and 'id="ready"' in page, fields
        client.post(f"{draft}/questions/5/remove", data={"csrf": csrf})
    # A condition on a later question is refused next to the condition, in words.
    refused = client.post(
        f"{draft}/questions/0",
        data={"csrf": csrf, "type": "yes_no", "id": "burnout", "text": "Burnt out?",
              "epsilon": "1", "show_if_json": '{"question": "calm", "equals": 3}'},
    )  # fmt: skip
    assert refused.status_code == 422 and 'id="show_if-problem"' in refused.text
    client.post(
        f"{draft}/questions/0",
        data={"csrf": csrf, "type": "yes_no", "id": "burnout", "text": "Burnt out?",
              "epsilon": "1"},
    )  # fmt: skip
    edit = client.get(f"{draft}/questions/4").text  # the form shows what was saved
    assert 'id="advice-applicable"' in edit  # optional and conditional: shares among answers
    assert 'value="Not at all"' in edit and "Think of last week." in edit
    assert re.search(r'id="optional"[^>]*checked', edit)
    assert re.search(r'<option value="burnout" selected>', edit)
    assert client.post(f"{draft}/publish", data={"csrf": csrf}).status_code == 303
    # The published survey's page says which questions are optional, their help and when
    # each is shown, in words.
    summary = client.get("/editor/surveys/quest").text
    calm_item = re.search(r'<li data-question="calm">(.*?)</li>', summary, re.S).group(1)
    assert "optional" in calm_item and "Help text: Think of last week." in calm_item
    assert "Shown only when “Burnt out?” is Yes" in calm_item
    calm = Survey.from_dict(client.get("/api/v1/surveys/quest").json["definition"]).question("calm")
    assert calm.type == "scale" and calm.points == 7 and calm.optional
    assert calm.anchors == ("Not at all", "Very") and calm.help == "Think of last week."
    assert calm.show_if is not None


def test_relay_noise_is_calibrated_and_advised(client, storage) -> None:
    from deniable.dummies import calibrate, noised_central_epsilon
    from deniable.survey_relay import RelayNoise

    csrf = sign_in(client, storage)
    draft = new_draft(client, csrf)
    add(client, draft, csrf, "yes_no", id="q", text="Q?", epsilon="2")
    client.post(
        f"{draft}/survey",
        data={"csrf": csrf, "survey_id": "noised", "title": "N", "relay_url": "https://relay.example",
              "min_batch": "1000", "shuffle_unit": "question", "noise": "1",
              "noise_epsilon": "1", "noise_delta": "1e-6", "noise_family": "geometric"},
    )  # fmt: skip
    page = client.get(draft).text
    assert 'id="ready"' in page and 'id="noise-dummies"' in page
    law = calibrate(1.0, 1e-6, "geometric").law
    advice = client.get(f"{draft}/questions/0").text
    shown = re.search(r'<div id="advice-relay-noise">(.*?)</div>', advice, re.S).group(1)
    assert f"about {law.mean:,.0f} dummies" in shown
    assert f"{noised_central_epsilon(law, 2.0, 1000, 1e-6):.3g}" in shown
    assert client.post(f"{draft}/publish", data={"csrf": csrf}).status_code == 303
    relay = client.get("/api/v1/surveys/noised").json["definition"]["relay"]
    RelayNoise.from_dict(relay["noise"]).verify()  # the signed law gives the signed (ε, δ)
    # Noise with whole submissions is refused next to the relay, in words.
    draft = new_draft(client, csrf)
    add(client, draft, csrf, "yes_no", id="q", text="Q?")
    client.post(
        f"{draft}/survey",
        data={"csrf": csrf, "survey_id": "n2", "title": "N", "relay_url": "https://relay.example",
              "min_batch": "1000", "shuffle_unit": "submission", "noise": "1",
              "noise_epsilon": "1", "noise_delta": "1e-6"},
    )  # fmt: skip
    page = client.get(draft).text
    assert 'id="shuffle_unit-problem"' in page and "shuffle_unit" in page


def _noised_draft(client, csrf: str, kind: str, survey_id: str, **fields: str) -> str:
    """A draft with one question of ``kind`` through a relay that adds noise."""
    draft = new_draft(client, csrf)
    assert add(client, draft, csrf, kind, id="q", text="Q?", **fields).status_code == 303
    client.post(
        f"{draft}/survey",
        data={"csrf": csrf, "survey_id": survey_id, "title": "N",
              "relay_url": "https://relay.example", "min_batch": "1000",
              "shuffle_unit": "question", "noise": "1", "noise_epsilon": "1",
              "noise_delta": "1e-6", "noise_family": "geometric"},
    )  # fmt: skip
    return draft


def test_relay_noise_advice_plans_the_respondents_with_the_signed_dummies(
    client, storage, monkeypatch
) -> None:
    """The respondents needed through the relay with its dummies are relay_noise_plan's for
    the question's mechanism at its ε and the signed law; a page never waits for the search
    longer than NOISE_WAIT_SECONDS (it says the figures are being worked out, and they
    appear once done), and a mechanism of too many report values is not planned on a page."""
    import time

    from deniable.aggregator.background import BackgroundResults
    from deniable.aggregator.editor import advice, drafts
    from deniable.dummies import calibrate
    from deniable.relay_noise_plan import noise_mechanism, noised_respondents

    csrf = sign_in(client, storage)
    monkeypatch.setattr(advice, "NOISE_WAIT_SECONDS", 0.0)  # the search is never done at once
    # Nothing planned before (another backend's run): the same store, empty.
    fresh = BackgroundResults(
        name="test-noise-advice", workers=1, capacity=512, max_pending=advice.NOISE_MAX_PENDING
    )
    monkeypatch.setattr(advice, "_noised", fresh)
    search = advice._noised_search  # a search already cached by an earlier run takes no time

    def slow_search(*arguments):
        time.sleep(0.5)
        return search(*arguments)

    monkeypatch.setattr(advice, "_noised_search", slow_search)
    monkeypatch.setattr(drafts, "_ADVICE", {})
    draft = _noised_draft(client, csrf, "yes_no", "noised-advice", epsilon="3")
    started = time.monotonic()
    page = client.get(f"{draft}/questions/0").text
    assert time.monotonic() - started < 5
    assert 'id="advice-noised-pending"' in page and 'id="advice-noised"' not in page
    law = calibrate(1.0, 1e-6, "geometric").law
    mechanism = noise_mechanism("yes_no", "binary_rr", epsilon=3.0)
    expected = [
        f"{noised_respondents(mechanism, law, batch=1000, half_width=h)[0]:,}" for h in (0.05, 0.1)
    ]
    deadline = time.monotonic() + 30
    while 'id="advice-noised"' not in page:
        assert time.monotonic() < deadline, "the relay-noise figures never appeared"
        time.sleep(0.1)
        page = client.get(f"{draft}/questions/0").text
    row = re.search(r'<tr id="advice-noised">(.*?)</tr>', page, re.S).group(1)
    assert re.findall(r"<td>([^<]*)</td>", row) == expected
    assert all(int(n.replace(",", "")) >= 1000 for n in expected)  # never below one batch
    # The dummies cost respondents: never fewer than through the relay without them.
    relayed = re.search(r'<tr id="advice-relayed">(.*?)</tr>', page, re.S).group(1)
    without = [int(n.replace(",", "")) for n in re.findall(r"<td>([^<]*)</td>", relayed)]
    assert [int(n.replace(",", "")) for n in expected] >= without
    # Too many report values for a page: said, not searched.
    options = "\n".join(f"Option {i}" for i in range(advice.NOISE_MAX_OUTPUT_VALUES + 2))
    draft = _noised_draft(
        client, csrf, "single_choice", "wide", options=options, epsilon="3", mechanism="grr"
    )
    page = client.get(f"{draft}/questions/0").text
    assert 'id="advice-noised-too-large"' in page and "plan --relay --relay-noise" in page


def test_option_sampling_advice_is_the_dry_runs_function_with_a_bounded_search(
    client, storage
) -> None:
    """The editor's figures come from aggregator.advice.respondents_needed, as create-survey
    --dry-run's do: the same where the exact-tail search runs, "at most" the closed-form
    figure where the editor leaves it out (past SAMPLED_SEARCH_MAX_N), never below the
    dry run's."""
    from deniable.aggregator.advice import respondents_needed
    from deniable.aggregator.editor.advice import FAMILY_WORDS, SAMPLED_SEARCH_MAX_N

    csrf = sign_in(client, storage)
    draft = new_draft(client, csrf)
    options = "\n".join(f"Tool {i}" for i in range(12))
    saved = add(client, draft, csrf, "multiple_choice", id="tools", text="Tools?",
                options=options, epsilon="1", then="stay")  # fmt: skip
    row = re.search(r'<tr id="advice-local">(.*?)</tr>', saved.text, re.S).group(1)
    shown = re.findall(r"<td>([^<]*)<span", row)
    named = re.findall(r'<span class="family"> ([^<]*)</span>', row)
    question = Survey.from_dict(
        {"format": "deniable.survey/2", "id": "s", "title": "S",
         "questions": [{"id": "tools", "type": "multiple_choice", "text": "Tools?",
                        "options": options.split("\n"), "epsilon": 1.0}]}
    ).questions[0]  # fmt: skip
    assert question.mechanism == "option_sampling"
    families = []
    for words, name, half_width in zip(shown, named, (0.05, 0.10), strict=True):
        exact, exact_bound, _ = respondents_needed(question, half_width)
        bounded, upper, family = respondents_needed(
            question, half_width, search_max_n=SAMPLED_SEARCH_MAX_N
        )
        assert not exact_bound and bounded >= exact
        assert words == (f"at most {bounded:,}" if upper else f"{bounded:,}")
        assert upper == (bounded > SAMPLED_SEARCH_MAX_N)
        assert name == FAMILY_WORDS[family]  # beside each figure, the interval it assumes
        families.append(family)
    assert shown[0].startswith("at most ")  # ±5 points of 12 options is past the search
    # Figures of two families are said to be so (their ratio is not the width's alone).
    assert ('id="advice-families"' in saved.text) == (families[0] != families[1])


def test_a_survey_s_language_is_chosen_and_its_translations_previewed(client, storage) -> None:
    """A translated survey copied into a draft keeps its language and translations; the preview
    offers each language, showing the survey's text in it; the language can be changed and the
    translations removed, and a bad code is refused next to its field."""
    from tests.shared.test_translations import german

    token = storage.create_operator_token("translations")
    created = client.post(
        "/api/v1/surveys",
        json={"definition": german()},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert created.status_code == 201, created.text
    csrf = sign_in(client, storage)
    draft = client.post("/editor/surveys/glueck/copy", data={"csrf": csrf}).headers["Location"]
    page = client.get(draft).text
    assert 'id="language" name="language" value="de"' in page
    assert "Imported with the survey: en." in page and 'id="keep-translations"' in page
    assert '. <span lang="de">Welche Farbe?</span></h3>' in page  # the survey's text marked
    links = re.findall(r'<a lang="(\w+)" href="[^"]*preview\?lang=\w+">([^<]+)</a>', page)
    assert links == [("de", "Deutsch"), ("en", "English")]
    german_page = client.get(f"{draft}/preview?lang=de").text
    assert '<html lang="de">' in german_page and "<h1>Glück bei der Arbeit</h1>" in german_page
    english = client.get(f"{draft}/preview?lang=en").text
    assert '<html lang="en">' in english and "<h1>Happiness at work</h1>" in english
    assert 'data-deniable-text-lang="en"' in english

    def save(**fields: str) -> str:
        form = {"csrf": csrf, "survey_id": "glueck-2", "title": "Glück bei der Arbeit"}
        form["description"] = "Eine kurze Umfrage."
        saved = client.post(f"{draft}/survey", data={**form, **fields})
        return client.get(draft).text if saved.status_code == 303 else saved.text

    page = save(language="xx1", keep_translations="1")
    assert 'id="language-problem"' in page and "Language:" in page
    assert "two or three lowercase letters" in page
    page = save(language="DE", keep_translations="1")  # written in capitals: the code
    assert 'value="de"' in page and 'id="ready"' in page and 'id="keep-translations"' in page
    page = save(language="de")  # the box unchecked: the translations go
    assert 'id="keep-translations"' not in page and 'id="ready"' in page
    links = re.findall(r'<a lang="(\w+)" href="[^"]*preview\?lang=\w+">', page)
    assert links == ["de", "en"]  # the page's words in English remain to preview
    english = client.get(f"{draft}/preview?lang=en").text
    assert '<h1 lang="de">Glück bei der Arbeit</h1>' in english  # untranslated: marked German


def test_a_translation_that_no_longer_fits_is_said_in_words() -> None:
    from deniable.aggregator.editor.drafts import check_draft
    from tests.shared.test_translations import german

    definition = german()
    definition["questions"][1]["options"].append("gelb")  # an option added after the import
    checked = check_draft(definition)
    assert checked.where == "translations" and checked.survey is None
    assert checked.problem == (
        "Translations: the translation into en, question farbe, its options: must translate "
        "all 4 options, in order; got 3"
    )
