"""The aggregator's relay routes under arbitrary input from a relay credential's holder
(aggregator/api/batches.py): never a 5xx, every refusal problem+json."""

from __future__ import annotations

import base64
import copy
import json
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deniable import sealing
from deniable.survey import Survey
from tests.relay.test_api import JSON
from tests.relay.test_relay_app import DEFINITION, RELAY_URL

PATHS = [("format",), ("unit",), ("sealed",), ("sealed", 0), ("extra",)]


@pytest.fixture(scope="module")
def aggregator(tmp_path_factory):
    from deniable.aggregator import create_app
    from deniable.aggregator.signing import current_key
    from deniable.aggregator.storage import current_storage

    app = create_app(
        {"HOME": str(tmp_path_factory.mktemp("batches")), "TESTING": True, "MAX_BODY_BYTES": 4096}
    )
    survey = Survey.from_dict(DEFINITION).upgraded()
    with app.app_context():
        current_storage().create_survey(survey, results_public=True)
        credential = current_storage().relay.create_credential(RELAY_URL)
        public = current_key().encryption.public_bytes
    question, size = survey.question("a"), sealing.unit_size(survey, "a")
    blobs = [
        base64.urlsafe_b64encode(
            sealing.seal(
                public,
                survey_id="s",
                unit="a",
                size=size,
                plaintext=sealing.unit_body(
                    [
                        {
                            "id": str(uuid.uuid4()),
                            "question": "a",
                            "payload": question.randomize(True),
                        }
                    ],
                    "a",
                ),
            )
        )
        .rstrip(b"=")
        .decode()
        for _ in range(3)
    ]
    return app.test_client(), {"Authorization": f"Bearer {credential}"}, blobs


def _mutated(blobs: list[str], path: tuple, value: object) -> dict:
    body = {"format": "deniable.batch/1", "unit": "a", "sealed": copy.copy(blobs)}
    target = body
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return body


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    data=st.data(),
    batch=st.sampled_from(["x" * 16, "bad id", "z" * 65, "é" * 20]),
    survey=st.sampled_from(["s", "nope"]),
)
def test_no_batch_gets_a_5xx_and_every_refusal_is_problem_json(aggregator, data, batch, survey):
    client, headers, blobs = aggregator
    body = data.draw(
        JSON.map(json.dumps)
        | st.builds(
            lambda path, value: json.dumps(_mutated(blobs, path, value)),
            st.sampled_from(PATHS),
            JSON,
        )
    )
    response = client.put(
        f"/api/v1/surveys/{survey}/batches/{batch}",
        data=body,
        content_type="application/json",
        headers=headers,
    )
    assert response.status_code < 500, response.get_data(as_text=True)
    if response.status_code >= 400:
        assert response.headers["Content-Type"] == "application/problem+json"


@pytest.mark.parametrize(
    "authorization", ["Bearer é\x00", "Bearer " + "a" * 100_000, "Basic x", "Bearer", ""]
)
def test_the_enrolment_digests_refuse_any_other_credential_plainly(aggregator, authorization):
    client, _, _ = aggregator
    response = client.get(
        "/api/v1/surveys/s/enrolment-digests", headers={"Authorization": authorization}
    )
    assert response.status_code in (401, 403), response.status_code
    assert response.headers["Content-Type"] == "application/problem+json"


@pytest.mark.parametrize("spelling", ["HTTPS://Relay.Example:443", "https://relay.example:443"])
def test_a_credential_names_its_relay_by_origin_not_by_spelling(tmp_path, spelling):
    """The signed relay.url and a credential's --relay-url are compared as URLs (origin and
    path, deniable.origins): case and a default port aside, the same relay is the same."""
    from deniable.aggregator import create_app
    from deniable.aggregator.storage import current_storage

    app = create_app({"HOME": str(tmp_path), "TESTING": True})
    survey = Survey.from_dict(
        {**DEFINITION, "relay": {**DEFINITION["relay"], "url": "https://relay.example"}}
    )
    with app.app_context():
        current_storage().create_survey(survey.upgraded(), results_public=True)
        credential = current_storage().relay.create_credential(spelling)
        assert current_storage().relay.credential_url(credential) == "https://relay.example"
    response = app.test_client().put(
        "/api/v1/surveys/s/batches/" + "b" * 32,
        json={"format": "deniable.batch/1", "unit": "a", "sealed": []},
        headers={"Authorization": f"Bearer {credential}"},
    )
    assert response.status_code == 422, response.get_json()  # past the credential: too few blobs
