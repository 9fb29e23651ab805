"""Results: exactly ``deniable.results.question_results`` of the stored payloads,
read-your-writes, no rescan."""

from __future__ import annotations

import csv
import io

import pytest

from deniable.results import question_results

from .conftest import assert_problem, demo_survey_dict, post_bulk, random_reports
from .conftest import expected_results as expected

RESULTS = "/api/v1/surveys/demo/results"
REPORTS = "/api/v1/surveys/demo/reports"


def test_empty_survey_has_null_estimates(client, created_survey):
    document = client.get(RESULTS).get_json()
    assert document["n_reports"] == 0
    assert [q["estimate"] for q in document["questions"]] == [None] * 4


def test_estimates_equal_question_results_exactly(client, created_survey, demo_definition):
    reports = random_reports(demo_definition, 400, seed=7)
    for start in range(0, 400, 100):
        assert post_bulk(client, "demo", reports[start : start + 100]).status_code == 201
    document = client.get(RESULTS + "?beta=0.1").get_json()
    assert document["survey"] == "demo" and document["title"] == "Demo survey"
    assert document["status"] == "open" and document["beta"] == 0.1
    assert document["n_reports"] == 400
    assert document["questions"] == expected(demo_definition, reports, beta=0.1)


def test_read_your_writes_across_partial_folds(app_config, demo_definition):
    from deniable.aggregator import create_app

    app = create_app({**app_config, "FOLD_CHUNK": 7, "RESULTS_CACHE_BYTES": 4096})
    storage = app.extensions["deniable.storage"]
    try:
        client = app.test_client()
        headers = {"Authorization": f"Bearer {storage.create_operator_token()}"}
        client.post("/api/v1/surveys", json={"definition": demo_definition}, headers=headers)
        reports = random_reports(demo_definition, 90, seed=3)
        sent = []
        for size in (1, 5, 13, 2, 30, 1, 38):
            batch, reports = reports[:size], reports[size:]
            assert post_bulk(client, "demo", batch).status_code == 201
            sent += batch
            document = client.get(RESULTS).get_json()
            assert document["n_reports"] == len(sent)
            assert document["questions"] == expected(demo_definition, sent)
            # The list view counts folded and pending reports alike.
            (summary,) = client.get("/api/v1/surveys").get_json()["surveys"]
            assert summary["n_reports"] == len(sent)
    finally:
        storage.close()


def test_results_never_rescan_the_report_log(client, created_survey, demo_definition, storage):
    reports = random_reports(demo_definition, 20)
    post_bulk(client, "demo", reports)
    before = client.get(RESULTS).get_json()
    # Folded reports leave ``pending``; a later fold reads only ``pending`` rows,
    # so the folded statistics stand without the log being read again.
    statistics = storage.fold("demo")
    assert sum(s.n for s in statistics.values()) == 20
    assert client.get(RESULTS).get_json() == before


def test_private_results_need_an_operator(client, operator_headers, demo_definition):
    definition = demo_survey_dict("private")
    client.post(
        "/api/v1/surveys",
        json={"definition": definition, "results_public": False},
        headers=operator_headers,
    )
    url = "/api/v1/surveys/private/results"
    assert_problem(client.get(url), 401, "unauthorized")
    assert_problem(client.get(url, headers={"Authorization": "Bearer forged"}), 403)
    assert client.get(url, headers=operator_headers).status_code == 200


@pytest.mark.parametrize("beta", ["0", "1", "-0.5", "nan", "inf", "abc", "", "0.07", "0.0500001"])
def test_bad_beta_is_400(client, created_survey, beta):
    assert_problem(client.get(f"{RESULTS}?beta={beta}"), 400, "invalid-parameter")


def test_unknown_survey_and_format(client, created_survey):
    assert_problem(client.get("/api/v1/surveys/nope/results"), 404)
    assert_problem(client.get(RESULTS + "?format=xml"), 400, "invalid-parameter")


def test_csv_has_one_row_per_category(client, created_survey, demo_definition):
    post_bulk(client, "demo", random_reports(demo_definition, 80))
    by_query = client.get(RESULTS + "?format=csv")
    by_accept = client.get(RESULTS, headers={"Accept": "text/csv"})
    assert by_query.mimetype == by_accept.mimetype == "text/csv"
    assert by_query.data == by_accept.data
    rows = list(csv.DictReader(io.StringIO(by_query.data.decode())))
    assert [(r["question"], r["label"]) for r in rows] == [
        ("smoker", "no"),
        ("smoker", "yes"),
        ("transport", "car"),
        ("transport", "bus"),
        ("transport", "bicycle"),
        ("transport", "foot"),
        ("tools", "email"),
        ("tools", "chat"),
        ("tools", "meetings"),
        ("overtime", "mean"),
    ]
    document = client.get(RESULTS).get_json()
    assert float(rows[0]["estimate"]) == document["questions"][0]["categories"][0]["estimate"]
    assert float(rows[-1]["estimate"]) == document["questions"][3]["mean"]


def test_csv_cells_cannot_be_formulas(client, operator_headers):
    definition = demo_survey_dict("formula")
    definition["questions"][1]["options"] = ["=HYPERLINK(1)", "+1", "@x", "plain"]
    client.post("/api/v1/surveys", json={"definition": definition}, headers=operator_headers)
    text = client.get("/api/v1/surveys/formula/results?format=csv").data.decode()
    labels = [row["label"] for row in csv.DictReader(io.StringIO(text))]
    assert "'=HYPERLINK(1)" in labels and "'+1" in labels and "'@x" in labels


def test_option_sampling_end_to_end_through_the_aggregator(client, operator_headers):
    """Devices randomize with the CSPRNG path, the API stores and folds, results estimate."""
    import uuid

    from deniable.survey import Survey

    definition = {
        "format": "deniable.survey/1",
        "id": "tools",
        "title": "Tools",
        "questions": [
            {
                "id": "tools",
                "type": "multiple_choice",
                "text": "Which?",
                "epsilon": 1.0,
                "mechanism": "option_sampling",
                "options": ["a", "b", "c", "d", "e", "f", "g", "h"],
            }
        ],
    }
    created = client.post(
        "/api/v1/surveys", json={"definition": definition}, headers=operator_headers
    )
    assert created.status_code == 201, created.get_data(as_text=True)
    question = Survey.from_dict(definition).question("tools")
    n, shares = 4000, [1.0, 0.0, 0.5, 0.25, 0.75, 0.1, 0.9, 0.5]
    answers = [
        [label for label, share in zip(question.options, shares, strict=True) if i < share * n]
        for i in range(n)
    ]
    payloads = [question.randomize(answer) for answer in answers]  # CSPRNG, device path
    assert {len(p) for p in payloads} == {4}  # fixed size: 1 index byte + 1 bit byte
    # One respondent's own submission (the device route), then the rest in bulk.
    first = {"id": str(uuid.uuid4()), "question": "tools", "payload": payloads[0]}
    own = client.post("/api/v1/surveys/tools/reports", json={"reports": [first]})
    assert own.status_code == 201
    for start in range(1, n, 1000):
        reports = [
            {"id": str(uuid.uuid4()), "question": "tools", "payload": p}
            for p in payloads[start : start + 1000]
        ]
        assert post_bulk(client, "tools", reports).status_code == 201
    bad = {"id": str(uuid.uuid4()), "question": "tools", "payload": "0802"}
    assert client.post("/api/v1/surveys/tools/reports", json={"reports": [bad]}).status_code == 422
    (result,) = client.get("/api/v1/surveys/tools/results").get_json()["questions"]
    assert result["mechanism"] == "option_sampling" and result["n"] == n
    assert result == question_results(question, question.statistics(payloads), n)
    # The noise is the CSPRNG's: at β = 1e-6 (false alarm 1e-6) the simultaneous
    # Bernstein intervals of the served statistics must cover every option.
    strict = question_results(question, question.statistics(payloads), n, beta=1e-6)
    for category, share in zip(strict["categories"], shares, strict=True):
        assert category["bernstein_simultaneous_lower"] <= share
        assert share <= category["bernstein_simultaneous_upper"]
    csv_text = client.get("/api/v1/surveys/tools/results?format=csv").get_data(as_text=True)
    assert "bernstein_simultaneous_lower" in csv_text.splitlines()[0]


@pytest.mark.parametrize("where", ["label", "text", "title", "description"])
@pytest.mark.parametrize("character", ["\r", "\n", "\x00", "\x1b", "\x85", "\x7f"])
def test_control_characters_in_survey_text_are_refused(client, operator_headers, where, character):
    """Regression: a label holding ``\\r=1+1`` split a CSV row into a formula."""
    definition = demo_survey_dict("hostile")
    hostile = f"Blue{character}=1+1"
    if where == "label":
        definition["questions"][1]["options"][0] = hostile
    elif where == "text":
        definition["questions"][0]["text"] = hostile
    else:
        definition[where] = hostile
    response = client.post(
        "/api/v1/surveys", json={"definition": definition}, headers=operator_headers
    )
    if where == "description" and character == "\n":
        assert response.status_code == 201  # the one kept exception: lines in a description
    else:
        assert_problem(response, 422, "invalid-survey")


def test_served_csv_is_rfc4180_and_guards_every_formula_start(client, operator_headers):
    """Parse the served CSV: CRLF rows, one row per category, no cell a spreadsheet would run."""
    from deniable.aggregator.api.results import to_csv
    from deniable.survey import Survey

    definition = demo_survey_dict("sheet")
    definition["questions"][1]["options"] = ["=1+1", "-2+3", "@SUM(A1)", 'say "hi", then']
    client.post("/api/v1/surveys", json={"definition": definition}, headers=operator_headers)
    post_bulk(client, "sheet", random_reports(definition, 40))
    data = client.get("/api/v1/surveys/sheet/results?format=csv").data
    assert data.count(b"\r\n") == data.count(b"\n") == 1 + 2 + 4 + 3 + 1
    rows = list(csv.reader(io.StringIO(data.decode(), newline="")))
    assert all(len(row) == len(rows[0]) for row in rows)
    labels = [row[rows[0].index("label")] for row in rows[1:]]
    assert labels[2:6] == ["'=1+1", "'-2+3", "'@SUM(A1)", 'say "hi", then']
    # The writer itself, fed labels validation would refuse: quoted whole, guarded.
    survey = Survey.from_dict(definition)
    document = client.get("/api/v1/surveys/sheet/results").get_json()
    for category, label in zip(
        document["questions"][1]["categories"], ["\r=1+1", "\t=1", "\0=1", "\n@x"], strict=True
    ):
        category["label"] = label
    text = to_csv(document, survey)
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert len(rows) == 1 + 2 + 4 + 3 + 1
    cells = [cell for row in rows for cell in row]
    assert not any(
        cell.startswith(("=", "+", "-", "@", "\t", "\r", "\n", "\0"))
        for cell in cells
        if not _number(cell)
    )


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
