"""Crosstabs end to end: a real gunicorn server on SQLite and PostgreSQL.

Devices answer through the Python client (one submission each, the public
route); an importer sends respondents to the bulk route; the analyst reads the
crosstab over HTTP with deniable.analysis, and recomputes it from the raw
export with the same package: the two agree exactly.
"""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest
import requests

from deniable.analysis import Aggregator, Export
from deniable.client import StateStore, SurveyClient
from deniable.survey import Survey

from .conftest import random_answer
from .test_server import server  # noqa: F401 - the gunicorn fixture

pytestmark = pytest.mark.slow
STATE_KEY = bytes(range(32))


def test_devices_bulk_and_analysis_agree(server, demo_definition, tmp_path):  # noqa: F811
    base, token = server
    operator = {"Authorization": f"Bearer {token}"}
    root = base.removesuffix("/api/v1")
    created = requests.post(
        f"{base}/surveys",
        json={"definition": demo_definition, "results_public": True},
        headers=operator,
        timeout=10,
    )
    assert created.status_code == 201, created.text
    survey = Survey.from_dict(created.json()["definition"])
    rng = np.random.default_rng(4)
    # Twelve devices answer with the Python client, each with its own state.
    for device in range(12):
        store = StateStore(tmp_path / f"device{device}.bin", key=STATE_KEY)
        client = SurveyClient(root, state=store, timeout=10, retries=1)
        answers = {q.id: random_answer(q, rng) for q in survey.questions}
        client.answer("demo", answers)
        client.flush()
    # An import of 200 respondents through the bulk route, in two requests.
    for _part in range(2):
        groups = [
            {
                "reports": [
                    {
                        "id": str(uuid.UUID(bytes=rng.bytes(16), version=4)),
                        "question": q.id,
                        "payload": q.randomize(random_answer(q, rng), rng),
                    }
                    for q in survey.questions
                ]
            }
            for _ in range(100)
        ]
        bulk = f"{base}/surveys/demo/reports/bulk"
        body = {"respondents": groups}
        response = requests.post(bulk, json=body, headers=operator, timeout=30)
        assert response.status_code == 201, response.text
        assert response.json()["respondents"] == 100
    analyst = Aggregator(root)
    served = analyst.crosstab("demo", "transport", "smoker")
    assert served.attrs["n"] == 212 and len(served) == 8
    assert {"lower", "upper", "simultaneous_lower", "bernstein_upper"} <= set(served.columns)
    export = requests.get(f"{base}/surveys/demo/export", headers=operator, timeout=30)
    offline = Export([json.loads(line) for line in export.text.splitlines()], created.json())
    local = offline.crosstab("transport", "smoker")
    assert local["estimate"].tolist() == served["estimate"].tolist()
    assert local["bernstein_simultaneous_upper"].tolist() == (
        served["bernstein_simultaneous_upper"].tolist()
    )
    means = analyst.crosstab("demo", "overtime", "tools")
    assert means.attrs["kind"] == "means" and len(means) == 3
    assert offline.crosstab("overtime", "tools")["mean"].tolist() == means["mean"].tolist()
    results = analyst.results("demo")
    assert set(results["question"]) == {q.id for q in survey.questions}
    compared = analyst.compare("demo", "demo", "transport")
    assert compared["difference"].tolist() == [0.0] * 4
    assert offline.compare(offline, "smoker")["difference"].tolist() == [0.0, 0.0]
