"""Property-based API tests: schemathesis generates requests from /api/v1/openapi.json.

Every generated request must get a documented status with a documented body
(problem+json for errors) and never a 5xx, and the stored report count may
only change by the reports a 201 acknowledged for the first time.  The fixture
survey's question ``0`` accepts any one-byte payload, so the schema's own
patterns (UUID ids, even-length lowercase hex) generate valid reports too.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from .conftest import assert_problem

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
# Per operation, generation mode and backend: 14 x 2 x 2 x 50 = 2,800 cases a run.
EXAMPLES_PER_OPERATION = 50
MINIMUM_CASES = 1000
# Mutable on purpose: counts cases across the parametrized operations of one session.
STATISTICS = {"cases": 0, "acknowledged": 0}

FUZZ_SURVEY = {
    "format": "deniable.survey/1",
    "id": "fuzz",
    "title": "Fuzzing target",
    "questions": [
        {
            "id": "0",
            "type": "single_choice",
            "text": "Any byte",
            "epsilon": 1.0,
            "mechanism": "grr",
            "options": [f"option {i}" for i in range(256)],
        },
        {"id": "a", "type": "yes_no", "text": "Yes or no?", "epsilon": 1.0},
    ],
}


@pytest.fixture
def fuzz_state(app, storage, operator_headers) -> dict[str, Any]:
    client = app.test_client()
    for survey_id, public in (("fuzz", True), ("fuzz-private", False), ("closable", True)):
        response = client.post(
            "/api/v1/surveys",
            json={"definition": dict(FUZZ_SURVEY, id=survey_id), "results_public": public},
            headers=operator_headers,
        )
        assert response.status_code == 201
    return {"known": set(), "turn": itertools.count(), "headers": operator_headers}


def steer(case, turn: int) -> None:
    """Point most cases at the existing surveys; never close the report target."""
    if "survey_id" not in (case.path_parameters or {}):
        return
    path = case.operation.path
    if path.endswith("/close"):
        choices = ["closable", None]
    elif path.endswith("/results"):
        choices = ["fuzz", "fuzz-private", None]
    else:
        choices = ["fuzz", "fuzz", None]
    choice = choices[turn % len(choices)]
    if choice is not None:
        case.path_parameters["survey_id"] = choice
    # A third of the submissions name question "0", whose one-byte payloads are all valid.
    if path.endswith(("/reports", "/bulk")) and turn % 3 == 0 and isinstance(case.body, dict):
        reports = case.body.get("reports", [case.body])
        for report in reports if isinstance(reports, list) else []:
            if isinstance(report, dict) and isinstance(report.get("payload"), str):
                report["question"] = "0"
                report["payload"] = report["payload"][:2]


def check_case(case, storage, state: dict[str, Any]) -> None:
    """Send one generated case; check the response and the stored row count."""
    turn = next(state["turn"])
    steer(case, turn)
    # Why override: most generated bearer tokens are forged; a valid one reaches deeper.
    headers = state["headers"] if turn % 4 else {}
    before = storage.count_reports()
    assert before == len(state["known"])
    response = case.call(headers=headers)
    case.validate_response(response, checks=CHECKS, headers=headers)
    STATISTICS["cases"] += 1
    key = (case.method, case.operation.path, response.status_code)
    state["statuses"][key] = state["statuses"].get(key, 0) + 1
    after = storage.count_reports()
    if response.status_code >= 400:
        assert_problem(response, response.status_code)
    is_submission = case.method == "POST" and case.operation.path.endswith(("/reports", "/bulk"))
    if is_submission and response.status_code == 201:
        new = set(response.json()["reports"]) - state["known"]
        state["known"] |= new
        STATISTICS["acknowledged"] += len(new)
        assert after == before + len(new)
    else:
        assert after == before, (case.method, case.path, response.status_code)


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_generated_requests(app, storage, fuzz_state, mode):
    schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 14  # crosstab and compare, relay batches (18)
    fuzz_state["statuses"] = {}
    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
            phases=[Phase.generate],
        )
        def run(case) -> None:
            check_case(case, storage, fuzz_state)

        try:
            run()
        except Unsatisfiable:
            # An operation without parameters or body has no invalid input to generate.
            assert mode is GenerationMode.NEGATIVE
    if mode is GenerationMode.POSITIVE:
        assert ("POST", "/api/v1/surveys/{survey_id}/reports", 201) in fuzz_state["statuses"]


def test_enough_cases_were_generated():
    """Runs after the generated tests in file order; skipped when they did not run."""
    if STATISTICS["cases"] == 0:
        pytest.skip("the schemathesis tests did not run in this session")
    assert STATISTICS["cases"] >= MINIMUM_CASES, STATISTICS
    assert STATISTICS["acknowledged"] > 0, "no generated report was ever valid"
