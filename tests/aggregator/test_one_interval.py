"""One interval everywhere: the JSON, the CSV, the CLI, the dashboard and pandas publish the
same ``lower``/``upper`` (the tightest published family, named beside it), with every
family in its own named columns."""

from __future__ import annotations

import csv
import io
import json

import pytest

from deniable.aggregator import cli
from deniable.analysis import Export, results_frame

from .conftest import post_bulk, random_reports

FAMILIES = ("chebyshev", "chebyshev_exact", "bernstein", "exact_tail")


@pytest.fixture
def answered(app, client, created_survey, demo_definition):
    reports = random_reports(demo_definition, 1200, seed=5)
    for start in range(0, len(reports), 400):
        response = post_bulk(client, "demo", reports[start : start + 400])
        assert response.status_code in (200, 201, 202), response.data
    return reports


def _bounds(item: dict, family: str, simultaneous: bool = False) -> tuple[float, float]:
    middle = "simultaneous_" if simultaneous else ""
    return item[f"{family}_{middle}lower"], item[f"{family}_{middle}upper"]


def test_json_lower_upper_are_the_tightest_family_named_beside_them(client, answered) -> None:
    document = client.get("/api/v1/surveys/demo/results").get_json()
    seen = set()
    for question in document["questions"]:
        family = question["tightest"]
        items = question.get("categories") or [question]
        for item in items:
            assert (item["lower"], item["upper"]) == _bounds(item, family)
            assert "chebyshev_lower" in item and "chebyshev_upper" in item
            if "categories" in question:
                simultaneous = question["simultaneous_tightest"]
                assert (item["simultaneous_lower"], item["simultaneous_upper"]) == _bounds(
                    item, simultaneous, True
                )
        seen.add(family)
    assert seen - {"chebyshev"}, "the survey should exercise a family tighter than Chebyshev"


def test_csv_names_the_family_next_to_lower_and_upper(client, answered) -> None:
    text = client.get("/api/v1/surveys/demo/results?format=csv").get_data(as_text=True)
    header = next(csv.reader(io.StringIO(text)))
    at = header.index("lower")
    assert header[at - 1 : at + 3] == ["estimate", "lower", "upper", "tightest"]
    at = header.index("simultaneous_lower")
    assert header[at : at + 3] == [
        "simultaneous_lower",
        "simultaneous_upper",
        "simultaneous_tightest",
    ]
    for family in FAMILIES:
        assert f"{family}_lower" in header and f"{family}_upper" in header


def _csv_bounds(text: str) -> dict[tuple[str, str], tuple[float, float, str]]:
    return {
        (row["question"], row["label"]): (float(row["lower"]), float(row["upper"]), row["tightest"])
        for row in csv.DictReader(io.StringIO(text))
        if row["lower"]
    }


def _json_bounds(document: dict) -> dict[tuple[str, str], tuple[float, float, str]]:
    bounds = {}
    for question in document["questions"]:
        for item in question.get("categories") or [{**question, "label": "mean"}]:
            key = (question["question"], item["label"])
            # A row with its own construction names it (a ratio, a scale's mean and NPS).
            bounds[key] = (item["lower"], item["upper"], item.get("tightest", question["tightest"]))
    return bounds


def _frame_bounds(frame) -> dict[tuple[str, str], tuple[float, float, str]]:
    return {
        (row.question, row.label): (row.lower, row.upper, row.tightest)
        for row in frame.itertuples()
    }


def test_json_csv_cli_and_pandas_publish_identical_bounds(
    app, client, answered, storage, capsys
) -> None:
    document = client.get("/api/v1/surveys/demo/results").get_json()
    expected = _json_bounds(document)
    assert _csv_bounds(client.get("/api/v1/surveys/demo/results?format=csv").get_data(True)) == (
        expected
    )
    frame = results_frame(document)
    assert _frame_bounds(frame) == expected
    assert frame.attrs["survey"] == "demo" and frame.attrs["beta"] == document["beta"]
    assert frame.attrs["tightest"] == {q["question"]: q["tightest"] for q in document["questions"]}
    assert frame.attrs["n"] == {q["question"]: q["n"] for q in document["questions"]}
    columns = list(frame.columns)
    assert columns[columns.index("lower") : columns.index("lower") + 3] == [
        "lower",
        "upper",
        "tightest",
    ]
    definition = client.get("/api/v1/surveys/demo").get_json()
    rows = [r.to_dict() for r in storage.export_reports("demo")]
    assert _frame_bounds(Export(rows, definition).results()) == expected
    options = [
        "--database",
        app.config["DATABASE"],
        "--signing-key",
        app.config["SIGNING_KEY_PATH"],
    ]
    assert cli.main([*options, "results", "demo", "--json"]) == 0
    assert _json_bounds(json.loads(capsys.readouterr().out)) == expected
    assert cli.main([*options, "results", "demo"]) == 0
    table = capsys.readouterr().out
    for (_, label), (lower, upper, _) in expected.items():
        if label == "mean":
            assert f"{lower:.4g}" in table and f"{upper:.4g}" in table
        else:
            assert f"{100 * lower:.1f}%" in table and f"{100 * upper:.1f}%" in table


def test_questionnaire_rows_are_published_alike_everywhere(
    app, client, operator_headers, storage, capsys
) -> None:
    """Optional, conditional and scale questions: the shares among those who answered, the
    declined and not-applicable shares, the scale's mean and NPS reach the JSON, the CSV,
    pandas, the export and the command line as the same rows with the same bounds."""
    import numpy as np

    from deniable.aggregator import demo
    from deniable.survey import Survey

    from ..shared.questionnaire_vectors import QUESTIONNAIRE_SURVEY

    # With a scale everyone answers (A = 1): its shares are published with the direct families.
    required = {
        "id": "loyal",
        "type": "scale",
        "points": 11,
        "text": "How likely are you to recommend us?",
        "epsilon": 1.0,
        "mechanism": "grr",
    }
    survey = Survey.from_dict(
        {**QUESTIONNAIRE_SURVEY, "questions": [*QUESTIONNAIRE_SURVEY["questions"], required]}
    )
    definition = {**survey.to_dict(), "id": "quest"}
    response = client.post(
        "/api/v1/surveys",
        json={"definition": definition, "results_public": True},
        headers=operator_headers,
    )
    assert response.status_code == 201, response.data
    people = demo.simulate_answers(survey, 400, np.random.default_rng(3))
    reports = [r for a in people for r in demo.respondent_reports(survey, a)["reports"]]
    for start in range(0, len(reports), 700):
        posted = post_bulk(client, "quest", reports[start : start + 700])
        assert posted.status_code in (200, 201, 202), posted.data
    document = client.get("/api/v1/surveys/quest/results").get_json()
    expected = _json_bounds(document)
    labels = {label for _, label in expected}
    assert {"declined", "not_applicable", "mean", "nps"} <= labels
    shares = {
        item["label"]: item["share_of"]
        for question in document["questions"]
        for item in question.get("categories") or []
        if "share_of" in item
    }
    assert shares["declined"] == "applicable" and shares["not_applicable"] == "all"
    assert shares["nps"] == "answered"
    assert _csv_bounds(client.get("/api/v1/surveys/quest/results?format=csv").get_data(True)) == (
        expected
    )
    assert _frame_bounds(results_frame(document)) == expected
    check_published_shares(document, client.get("/api/v1/surveys/quest/results?format=csv"))
    served = client.get("/api/v1/surveys/quest").get_json()
    rows = [r.to_dict() for r in storage.export_reports("quest")]
    assert _frame_bounds(Export(rows, served).results()) == expected
    options = [
        "--database",
        app.config["DATABASE"],
        "--signing-key",
        app.config["SIGNING_KEY_PATH"],
    ]
    assert cli.main([*options, "results", "quest", "--json"]) == 0
    assert _json_bounds(json.loads(capsys.readouterr().out)) == expected
    assert cli.main([*options, "results", "quest"]) == 0
    table = capsys.readouterr().out
    # Operators read words, never the wire labels: yes and no, the non-response values, the NPS.
    for said in ("net promoter score", "Prefer not to say", "Not asked", "Yes", "No"):
        assert said in table, said
    assert "not_applicable" not in table and "declined" not in table
    assert "Prefer not to say: share of those asked" in table


def check_published_shares(document: dict, response) -> None:
    """The CSV and pandas publish the JSON's numbers: the shares among those who answered add
    to one (single choice, yes/no, scale), a scale's NPS and mean are the shares', the mean
    and NPS rows leave the question's half-widths empty, a required scale names its direct
    family, and every row has its question's mechanism and epsilon."""
    text = response.get_data(as_text=True)
    rows = list(csv.DictReader(io.StringIO(text)))
    frame = results_frame(document)
    assert list(frame["mechanism"]) == [row["mechanism"] for row in rows]
    assert [float(e) for e in frame["epsilon"]] == [float(row["epsilon"]) for row in rows]
    for question in document["questions"]:
        if question["type"] in ("numeric", "multiple_choice") or not question["n"]:
            continue
        own = [row for row in rows if row["question"] == question["question"]]
        shares = {
            row["label"]: row["estimate"]
            for row in own
            if row["share_of"] == "answered" and row["label"] not in ("mean", "nps")
        }
        if not shares:  # no extras: raw unbiased estimates, as every plain single choice
            continue
        if "" in shares.values():  # nobody is estimated to have answered: no shares, no scores
            assert {row["estimate"] for row in own if row["label"] in ("mean", "nps")} <= {""}
            continue
        shares = {label: float(value) for label, value in shares.items()}
        assert sum(shares.values()) == pytest.approx(1.0, abs=1e-12), question["question"]
        for row in own:
            if row["estimate"]:  # the declined share is empty when nobody is estimated asked
                assert float(row["lower"]) <= float(row["estimate"]) <= float(row["upper"]), row
            if row["label"] in ("mean", "nps"):
                assert row["half_width"] == row["variance_bound"] == "", row
        scores = {row["label"]: float(row["estimate"]) for row in own if row["label"] == "nps"}
        if scores:
            promoters = shares["9"] + shares["10"]
            detractors = sum(shares[str(v)] for v in range(7))
            assert scores["nps"] == pytest.approx(100 * (promoters - detractors), abs=1e-9)
    loyal = next(q for q in document["questions"] if q["question"] == "loyal")
    assert loyal["tightest"] != "ratio" and loyal["answered"] == 1.0
    loyal_rows = [row for row in rows if row["question"] == "loyal"]
    assert {row["tightest"] for row in loyal_rows[:11]} == {loyal["tightest"]}
    assert all(row[f"{loyal['tightest']}_lower"] == row["lower"] for row in loyal_rows[:11])
