"""SurveyClient with enrolment tokens, against the real in-process aggregator."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from deniable.aggregator.storage import current_storage
from deniable.client import InvalidParameter, StateStore, SurveyClient, TransportError
from deniable.client.session import EnrolmentTokenRequired
from deniable.errors import AlreadyAnswered

from .conftest import ANSWERS, BASE, CANARY_DEFINITION, GENEROUS, STATE_KEY, definition
from .test_session import ALTERNATIVES, BASELINE

HEADER = "X-Deniable-Enrolment"


def create_gated(aggregator, survey: dict[str, Any]) -> None:
    aggregator.operator(
        "POST", "/api/v1/surveys", {"definition": survey, "require_enrolment": True}
    )


def issue(aggregator, survey_id: str, count: int) -> list[str]:
    with aggregator.app.app_context():
        return current_storage().issue_enrolment_tokens(survey_id, count)


def spent(aggregator, survey_id: str) -> int:
    with aggregator.app.app_context():
        return current_storage().enrolment_token_counts(survey_id)[1]


def test_answer_sends_the_token_with_the_batch(aggregator, adapter, client) -> None:
    create_gated(aggregator, definition())
    (token,) = issue(aggregator, "s1", 1)
    receipt = client.answer(client.fetch("s1"), ANSWERS, enrolment_token=token)
    assert receipt.delivered
    (post,) = adapter.report_posts()
    assert post.headers[HEADER] == token
    assert sorted(r["id"] for r in aggregator.export("s1")) == sorted(receipt.report_ids)
    assert spent(aggregator, "s1") == 1
    # Requests other than the batch never carry the token.
    assert all(HEADER not in s.headers for s in adapter.seen if s is not post)


def test_without_a_token_the_client_refuses_before_anything(aggregator, adapter, client) -> None:
    """Regression: it asked, charged, got 401, dropped the batch, then said
    AlreadyAnswered for ever; the respondent could never take part."""
    create_gated(aggregator, definition())
    verified = client.fetch("s1")
    assert verified.require_enrolment is True
    with pytest.raises(EnrolmentTokenRequired):
        client.answer(verified, ANSWERS)
    assert adapter.report_posts() == [] and client.budget()["spent_total"] == 0
    assert client.pending() == 0
    (token,) = issue(aggregator, "s1", 1)
    assert client.answer(client.fetch("s1"), ANSWERS, enrolment_token=token).delivered
    assert len(aggregator.export("s1")) == 4


def test_a_refused_batch_waits_for_a_token_byte_for_byte(aggregator, adapter, client) -> None:
    """A 401 (the flag changed after fetch) keeps the batch; flush(enrolment_token) sends it."""
    create_gated(aggregator, definition())
    verified = dataclasses.replace(client.fetch("s1"), require_enrolment=False)
    with pytest.raises(TransportError) as refused:
        client.answer(verified, ANSWERS)
    assert refused.value.status == 401
    charged = client.budget()["spent_total"]
    assert charged > 0 and client.pending() == 1
    assert client.flush().pending == 1  # without a token: not resent, still kept
    assert len(adapter.report_posts()) == 1
    with pytest.raises(InvalidParameter):
        client.flush(enrolment_token="two words")
    (token,) = issue(aggregator, "s1", 1)
    assert client.flush(enrolment_token=token).delivered == 1
    first, last = adapter.report_posts()
    assert last.body == first.body and last.headers[HEADER] == token
    assert client.budget()["spent_total"] == charged  # the ledger is charged once
    assert len(aggregator.export("s1")) == 4 and client.pending() == 0


def test_a_spent_token_is_refused(aggregator, make_client, tmp_path, http) -> None:
    create_gated(aggregator, definition())
    (token,) = issue(aggregator, "s1", 1)
    first = make_client()
    first.answer("s1", ANSWERS, enrolment_token=token)
    second = SurveyClient(
        BASE, state=StateStore(tmp_path / "b" / "s.bin", key=STATE_KEY), session=http
    )
    with pytest.raises(TransportError) as refused:
        second.answer("s1", ANSWERS, enrolment_token=token)
    assert refused.value.status == 403
    assert len(aggregator.export("s1")) == 4
    # The refused batch is kept; a fresh token delivers it.
    assert second.pending() == 1
    (fresh,) = issue(aggregator, "s1", 1)
    assert second.flush(enrolment_token=fresh, survey_id="s1").delivered == 1
    assert len(aggregator.export("s1")) == 8


def test_lost_response_is_retried_with_the_token_and_stored_once(
    aggregator, adapter, client
) -> None:
    create_gated(aggregator, definition())
    (token,) = issue(aggregator, "s1", 1)
    adapter.drop_responses = 1  # stored and spent, but the device never hears
    receipt = client.answer(client.fetch("s1"), ANSWERS, enrolment_token=token)
    assert receipt.delivered
    posts = adapter.report_posts()
    assert len(posts) == 2
    assert posts[0].body == posts[1].body and posts[0].headers[HEADER] == token
    assert posts[1].headers[HEADER] == token
    assert len(aggregator.export("s1")) == 4 and spent(aggregator, "s1") == 1


def test_token_waits_in_the_outbox_across_processes(aggregator, adapter, http, tmp_path) -> None:
    create_gated(aggregator, definition())
    (token,) = issue(aggregator, "s1", 1)
    path = tmp_path / "device" / "state.bin"
    first = SurveyClient(
        BASE, state=StateStore(path, key=STATE_KEY), session=http, sleep=lambda s: None, retries=1
    )
    verified = first.fetch("s1")
    adapter.offline = True
    assert not first.answer(verified, ANSWERS, enrolment_token=token).delivered
    adapter.offline = False
    again = SurveyClient(BASE, state=StateStore(path, key=STATE_KEY), session=http)
    assert again.flush().delivered == 1
    assert adapter.report_posts()[-1].headers[HEADER] == token
    assert len(aggregator.export("s1")) == 4 and spent(aggregator, "s1") == 1


@pytest.mark.parametrize("bad", ["", "two words", "line\r\nX-Evil: 1", "é" * 3, "x" * 257, 42])
def test_bad_tokens_are_refused_before_anything_is_charged(
    aggregator, adapter, client, bad
) -> None:
    create_gated(aggregator, definition())
    verified = client.fetch("s1")
    with pytest.raises(InvalidParameter):
        client.answer(verified, ANSWERS, enrolment_token=bad)
    assert adapter.report_posts() == [] and client.budget()["spent_total"] == 0


def test_requests_with_tokens_do_not_depend_on_the_true_answer(
    aggregator, adapter, http, tmp_path
) -> None:
    create_gated(aggregator, CANARY_DEFINITION)
    cases = [(q, v) for q, values in ALTERNATIVES.items() for v in values]
    tokens = issue(aggregator, "canary", len(cases))
    captured = []
    for device, ((question_id, value), token) in enumerate(zip(cases, tokens, strict=True)):
        store = StateStore(tmp_path / f"dev{device}" / "state.bin", key=STATE_KEY)
        start = len(adapter.seen)
        client = SurveyClient(BASE, state=store, session=http, policy=GENEROUS)
        client.answer("canary", {**BASELINE, question_id: value}, enrolment_token=token)
        captured.append(adapter.seen[start:])
    # Each device has its own token, so compare header values by length only.
    shapes = {
        tuple(
            (
                s.method,
                s.path,
                tuple(sorted((k, len(v)) for k, v in s.headers.items())),
                len(s.body),
            )
            for s in seen
        )
        for seen in captured
    }
    assert len(shapes) == 1, shapes
    assert len(aggregator.export("canary")) == len(cases) * len(CANARY_DEFINITION["questions"])
    assert spent(aggregator, "canary") == len(cases)
    assert all(json.loads(seen[-1].body)["reports"] for seen in captured)


def test_already_answered_follows_the_key_not_the_url_spelling(
    aggregator, adapter, http, store
) -> None:
    """Hardening: two spellings of one aggregator (one key) are one aggregator."""
    aggregator.create(definition())
    other = "http://AGGREGATOR.test:80"
    http.mount(other, adapter)
    first = SurveyClient(BASE, state=store, session=http)
    first.answer("s1", ANSWERS)
    second = SurveyClient(other + "/", state=store, session=http)
    assert second.origin != first.origin
    with pytest.raises(AlreadyAnswered):
        second.fetch("s1")
    assert len(aggregator.export("s1")) == 4
