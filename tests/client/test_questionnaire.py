"""A survey with skip logic and optional questions, answered by the real client against the real
aggregator app: whatever the path, the requests are the same (docs/protocol.md §5.5).

Every path through the survey (answered, declined, not shown) must produce the same requests
in the same order, with bodies of the same size and the same reports in the same order, and
charge the ledger the same ε.  A client that skipped a hidden question, sent a shorter report
for a declined one or charged less on a short path fails here.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import requests

from deniable.client import StateStore, SurveyClient
from deniable.errors import InvalidValue

from ..shared.test_questionnaire import BASE
from .conftest import BASE as URL
from .conftest import STATE_KEY, FlaskAdapter

PATHS = {
    "smoker, detractor": {"smoke": True, "much": 12, "nps": 3, "why": ["a"]},
    "non-smoker, reason a": {"smoke": False, "nps": 2, "why": ["a"], "fav": "z"},
    "declined, promoter": {"smoke": None, "nps": 10, "fav": "y"},
    "declined the number": {"smoke": True, "nps": 7},
    "shortest": {"smoke": False, "nps": 8},
    "detractor without a": {"smoke": False, "nps": 0, "why": ["b", "c"]},
    "everything declined": {"nps": 5, "why": []},
}


def shape(seen) -> list[tuple]:
    """What an observer of the wire sees: method, path, body size, and per report its
    question and payload length (the ids are random; their length is fixed)."""
    result = []
    for request in seen:
        reports = ()
        if request.method == "POST" and request.path.endswith("/reports"):
            body = json.loads(request.body)
            reports = tuple(
                (r["question"], len(r["payload"]), len(r["id"])) for r in body["reports"]
            )
        result.append((request.method, request.path, len(request.body), reports))
    return result


@pytest.fixture
def survey(aggregator) -> dict:
    definition = copy.deepcopy(BASE)
    definition["id"] = "paths"
    return aggregator.create(definition)


def answer_on_a_new_device(adapter: FlaskAdapter, directory: Path, answers: dict):
    adapter.seen.clear()
    session = requests.Session()
    session.mount(URL, adapter)
    store = StateStore(directory / "state.bin", key=STATE_KEY)
    client = SurveyClient(URL, state=store, session=session, sleep=lambda s: None, retries=3)
    client.answer("paths", answers)
    return shape(adapter.seen), client.budget()["spent_total"]


def test_every_path_sends_the_same_requests_and_charges_the_same(
    aggregator, adapter, survey, tmp_path
) -> None:
    seen = {
        name: answer_on_a_new_device(adapter, tmp_path / f"device-{i}", answers)
        for i, (name, answers) in enumerate(PATHS.items())
    }
    (first_shape, first_charge), *others = seen.values()
    posts = [entry for entry in first_shape if entry[3]]
    assert len(posts) == 1 and [q for q, *_ in posts[0][3]] == [
        "smoke",
        "much",
        "nps",
        "why",
        "fav",
    ]
    assert first_charge == pytest.approx(6.0)
    for name, (other_shape, charge) in seen.items():
        assert other_shape == first_shape, name
        assert charge == first_charge, name
    # One report per question per respondent reached the aggregator.
    exported = aggregator.export("paths")
    assert len(exported) == 5 * len(PATHS)


def test_an_answer_off_the_path_sends_nothing(aggregator, adapter, survey, tmp_path) -> None:
    with pytest.raises(InvalidValue, match="not shown"):
        answer_on_a_new_device(adapter, tmp_path, {"smoke": False, "much": 3, "nps": 8})
    with pytest.raises(InvalidValue, match="'why'"):
        answer_on_a_new_device(adapter, tmp_path, {"smoke": False, "nps": 3})
    assert adapter.report_posts() == []
    assert aggregator.export("paths") == []
