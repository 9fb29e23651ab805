"""The respond page of a relayed survey: sealing.js pinned, and the relay allowed to connect."""

from __future__ import annotations

from deniable.aggregator.respond import SEALING, integrity, survey_modules
from deniable.survey import Survey

DEFINITION = {
    "format": "deniable.survey/2",
    "id": "relayed",
    "title": "Relayed",
    "questions": [{"id": "q", "type": "yes_no", "text": "Yes?", "epsilon": 1.0}],
}


def test_modules_and_csp_follow_the_signed_relay(client, operator_headers):
    plain = Survey.from_dict(DEFINITION)
    assert not set(SEALING) & set(survey_modules(plain))
    relay = {"url": "https://relay.example:8443", "min_batch": 10, "shuffle_unit": "question"}
    relayed = Survey.from_dict({**DEFINITION, "relay": relay})
    assert set(SEALING) <= set(survey_modules(relayed))
    response = client.post("/api/v1/surveys", headers=operator_headers,
                           json={"definition": {**DEFINITION, "relay": relay}})  # fmt: skip
    assert response.status_code == 201, response.get_data(as_text=True)
    page = client.get("/surveys/relayed/respond")
    assert page.status_code == 200
    csp = page.headers["Content-Security-Policy"]
    assert "connect-src 'self' https://relay.example:8443;" in csp
    assert integrity()["sealing.js"] in page.get_data(as_text=True)
    assert client.get("/static/deniable/sealing.js").status_code == 200
