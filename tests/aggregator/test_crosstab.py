"""Crosstabs and comparisons through the API, on both backends.

The recount: the crosstab of the exported raw reports, recomputed by a plain
loop over submissions (support sets from each oracle's own ``support_counts``
of one report), equals the served one exactly.
"""

from __future__ import annotations

import csv
import io
import json
import uuid
from typing import Any

import numpy as np
import pytest

from deniable.survey import Survey

from .conftest import assert_problem, demo_survey_dict, random_answer

URL = "/api/v1/surveys/demo"


def respondents_body(survey: Survey, count: int, seed: int = 0, skip: float = 0.0) -> dict:
    """``count`` respondents answering every question (each skipped with probability ``skip``)."""
    rng = np.random.default_rng(seed)
    groups = []
    for _ in range(count):
        reports = [
            {
                "id": str(uuid.UUID(bytes=rng.bytes(16), version=4)),
                "question": q.id,
                "payload": q.randomize(random_answer(q, rng), rng),
            }
            for q in survey.questions
            if rng.random() >= skip
        ]
        if reports:
            groups.append({"reports": reports})
    return {"respondents": groups}


def post_respondents(client, headers, body, survey_id="demo"):
    return client.post(f"/api/v1/surveys/{survey_id}/reports/bulk", json=body, headers=headers)


def recount(survey: Survey, exported: list[dict[str, Any]], rows: str, columns: str) -> dict:
    """The co-score matrix and marginal sums by a straightforward loop over submissions."""
    by_submission: dict[int, dict[str, str]] = {}
    for report in exported:
        by_submission.setdefault(report["submission"], {})[report["question"]] = report["payload"]
    a, b = survey.question(rows), survey.question(columns)

    def scores(question, payload):
        oracle = question.oracle
        report = oracle.decode_many([payload])
        if question.type == "numeric":
            return [int(report[0])]
        if question.mechanism == "option_sampling":
            option, bit = (int(v) for v in report[0])
            return [(2 * bit - 1) if v == option else 0 for v in range(oracle.options)]
        if question.type == "multiple_choice":
            return [int(v) for v in report[0]]
        return [int(v) for v in oracle.support_counts(report)]

    n, joint = 0, np.zeros((len(a.labels), len(b.labels)), dtype=np.int64)
    row_sums, column_sums = np.zeros(len(a.labels), np.int64), np.zeros(len(b.labels), np.int64)
    for answers in by_submission.values():
        if rows in answers and columns in answers:
            x, y = scores(a, answers[rows]), scores(b, answers[columns])
            n += 1
            row_sums += x
            column_sums += y
            for i, xi in enumerate(x):
                for j, yj in enumerate(y):
                    joint[i, j] += xi * yj
    return {
        "n": n,
        "rows": row_sums.tolist(),
        "columns": column_sums.tolist(),
        "joint": joint.tolist(),
    }


def test_crosstab_recount_from_export_matches_served(
    client, created_survey, operator_headers, storage, backend
):
    survey = Survey.from_dict(created_survey["definition"])
    body = respondents_body(survey, 150, seed=3, skip=0.2)
    response = post_respondents(client, operator_headers, body)
    assert response.status_code == 201, response.data
    assert response.get_json()["respondents"] == len(body["respondents"])
    # One respondent through the public route (one submission of its own).
    single = respondents_body(survey, 1, seed=9)["respondents"][0]
    assert client.post(URL + "/reports", json=single).status_code == 201
    export = client.get(URL + "/export", headers=operator_headers)
    exported = [json.loads(line) for line in export.data.splitlines()]
    assert all(isinstance(r["submission"], int) for r in exported)
    first_seq: dict[int, int] = {}
    for report in exported:
        first_seq.setdefault(report["submission"], report["seq"])
    assert len(first_seq) == len(body["respondents"]) + 1  # one key per submission
    if backend == "sqlite":  # the key is the seq of the submission's first report
        assert all(key == seq for key, seq in first_seq.items())
    from deniable.aggregator.crosstabs import folded_statistics

    record = storage.get_survey("demo")
    for rows, columns in [
        ("transport", "smoker"),
        ("tools", "transport"),
        ("smoker", "overtime"),
        ("transport", "tools"),
    ]:
        expected = recount(survey, exported, rows, columns)
        served = folded_statistics(
            storage, record, survey.question(rows), survey.question(columns)
        ).to_dict()
        assert served == expected, (rows, columns)
        document = client.get(URL + f"/crosstab?rows={rows}&columns={columns}").get_json()
        assert document["n"] == expected["n"] > 80


def test_crosstab_document_and_formats(client, created_survey, operator_headers):
    survey = Survey.from_dict(created_survey["definition"])
    assert (
        post_respondents(
            client, operator_headers, respondents_body(survey, 120, seed=1)
        ).status_code
        == 201
    )
    document = client.get(URL + "/crosstab?rows=transport&columns=smoker&beta=0.1").get_json()
    assert document["kind"] == "joint" and document["n"] == 120 and document["beta"] == 0.1
    assert len(document["cells"]) == 8 and document["epsilon"] == 3.0
    assert "No extra privacy cost" in document["privacy"]
    cell = document["cells"][0]
    assert (
        cell["lower"] <= cell["estimate"] <= cell["upper"]
        or cell["estimate"] < 0
        or (cell["estimate"] > 1)
    )
    assert cell["simultaneous_lower"] <= cell["lower"]
    assert {"chebyshev", "chebyshev_exact", "bernstein"} == {
        i["family"] for i in document["intervals"]
    }
    means = client.get(URL + "/crosstab?rows=overtime&columns=transport").get_json()
    assert means["kind"] == "means" and means["by"] == "transport"
    assert all(0 <= c["lower"] <= c["upper"] <= 20 for c in means["categories"])
    text = client.get(URL + "/crosstab?rows=transport&columns=smoker&format=csv").data.decode()
    table = list(csv.DictReader(io.StringIO(text)))
    assert len(table) == 8 and table[0]["row"] == "car" and table[0]["column"] == "no"
    compared = client.get(
        URL + "/crosstab?rows=transport&columns=smoker&first_row=car"
        "&first_column=yes&second_row=bus&second_column=yes"
    ).get_json()
    assert compared["comparison"]["dependence"] == "any"
    assert compared["comparison"]["sentence"].startswith("differs by ")
    # Later asks of the same pair fold only what arrived since; the transposed pair agrees.
    again = client.get(URL + "/crosstab?rows=smoker&columns=transport").get_json()
    assert again["n"] == 120
    assert again["cells"][1]["estimate"] == pytest.approx(document["cells"][2]["estimate"])


def test_crosstab_refusals(client, created_survey, operator_headers):
    assert_problem(client.get(URL + "/crosstab?rows=transport"), 400)
    assert_problem(client.get(URL + "/crosstab?rows=transport&columns=transport"), 400)
    assert_problem(client.get(URL + "/crosstab?rows=overtime&columns=overtime"), 400)
    assert_problem(client.get(URL + "/crosstab?rows=nope&columns=smoker"), 400)
    assert_problem(client.get(URL + "/crosstab?rows=transport&columns=smoker&beta=0.3"), 400)
    empty = client.get(URL + "/crosstab?rows=transport&columns=smoker").get_json()
    assert empty["n"] == 0 and empty["estimate"] is None
    # Loose bulk reports (the old format) are stored, and make crosstabs unavailable.
    survey = Survey.from_dict(created_survey["definition"])
    loose = [r for g in respondents_body(survey, 5, seed=2)["respondents"] for r in g["reports"]]
    response = client.post(URL + "/reports/bulk", json={"reports": loose}, headers=operator_headers)
    assert response.status_code == 201
    problem = assert_problem(client.get(URL + "/crosstab?rows=transport&columns=smoker"), 409)
    assert "unavailable" in problem["detail"]
    # A respondent answering one question twice is refused whole.
    twice = respondents_body(survey, 2, seed=4)
    twice["respondents"][1]["reports"].append(
        {**twice["respondents"][1]["reports"][0], "id": str(uuid.uuid4())}
    )
    assert_problem(post_respondents(client, operator_headers, twice), 422)


def test_private_surveys_stay_private(client, operator_headers, storage):
    definition = demo_survey_dict("hidden")
    client.post(
        "/api/v1/surveys",
        json={"definition": definition, "results_public": False},
        headers=operator_headers,
    )
    path = "/api/v1/surveys/hidden/crosstab?rows=transport&columns=smoker"
    assert_problem(client.get(path), 401)
    assert client.get(path, headers=operator_headers).status_code == 200
    limited = storage.create_operator_token("other", surveys=["demo"])
    assert_problem(client.get(path, headers={"Authorization": f"Bearer {limited}"}), 403)
    compare = "/api/v1/surveys/hidden/compare?question=smoker&with=hidden"
    assert_problem(client.get(compare), 401)


def test_compare_two_surveys(client, operator_headers):
    for name, seed in (("wave1", 1), ("wave2", 2)):
        definition = demo_survey_dict(name)
        client.post(
            "/api/v1/surveys",
            json={"definition": definition, "results_public": True},
            headers=operator_headers,
        )
        body = respondents_body(Survey.from_dict(definition), 60, seed=seed)
        assert post_respondents(client, operator_headers, body, name).status_code == 201
    document = client.get("/api/v1/surveys/wave1/compare?question=transport&with=wave2").get_json()
    assert document["dependence"] == "independent" and len(document["comparisons"]) == 4
    row = document["comparisons"][0]
    assert row["difference"] == pytest.approx(row["second"] - row["first"])
    assert row["simultaneous_lower"] <= row["lower"] and row["sentence"].startswith("changed by")
    numeric = client.get("/api/v1/surveys/wave1/compare?question=overtime&with=wave2").get_json()
    assert numeric["comparisons"][0]["label"] == "mean"
    text = client.get("/api/v1/surveys/wave1/compare?question=smoker&with=wave2&format=csv")
    assert text.data.decode().startswith("label,first,second,difference")
    assert_problem(
        client.get(
            "/api/v1/surveys/wave1/compare?question=smoker&with=wave2&with_question=transport"
        ),
        400,
    )


def test_cli_crosstab_and_compare(
    client, created_survey, operator_headers, database, backend, capsys, tmp_path
):
    if backend != "sqlite":
        pytest.skip("the CLI reads the same storage; once is enough")
    from deniable.aggregator import cli

    survey = Survey.from_dict(created_survey["definition"])
    assert (
        post_respondents(client, operator_headers, respondents_body(survey, 80, seed=5)).status_code
        == 201
    )
    base = ["--database", database, "--signing-key", str(tmp_path / "key.pem")]
    assert (
        cli.main(
            [
                *base,
                "crosstab",
                "demo",
                "transport",
                "smoker",
                "--compare",
                "car",
                "yes",
                "bus",
                "yes",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "n = 80" in out and "transport" not in out.splitlines()[0] and "differs by" in out
    assert cli.main([*base, "crosstab", "demo", "overtime", "transport", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "means"
    assert cli.main([*base, "crosstab", "demo", "transport", "tools", "--csv"]) == 0
    assert capsys.readouterr().out.startswith("row,column,estimate")
    assert cli.main([*base, "crosstab", "demo", "transport", "nope"]) == 2
    assert "no question 'nope'" in capsys.readouterr().err
    assert cli.main([*base, "compare", "demo", "demo", "smoker"]) == 0
    assert "changed by 0 points" in capsys.readouterr().out
    assert cli.main([*base, "crosstab", "missing", "a", "b"]) == 3


def test_dashboard_pages(client, created_survey, operator_headers):
    survey = Survey.from_dict(created_survey["definition"])
    assert (
        post_respondents(client, operator_headers, respondents_body(survey, 90, seed=6)).status_code
        == 201
    )
    page = client.get("/surveys/demo").data.decode()
    assert 'id="crosstab-link"' in page
    html = client.get("/surveys/demo/crosstab?rows=transport&columns=smoker").data.decode()
    assert 'id="joint"' in html and 'data-n="90"' in html and html.count("data-estimate=") == 8
    assert "background: hsl(" in html and 'aria-current="true"' in html
    assert html.count("differs by") == 2  # largest minus smallest, per column
    assert (
        'id="means"'
        in client.get("/surveys/demo/crosstab?rows=transport&columns=overtime").data.decode()
    )
    assert client.get("/surveys/demo/crosstab?rows=nope&columns=smoker").status_code == 200
    definition = demo_survey_dict("later")
    client.post(
        "/api/v1/surveys",
        json={"definition": definition, "results_public": True},
        headers=operator_headers,
    )
    post_respondents(client, operator_headers, respondents_body(survey, 40, seed=8), "later")
    assert "/surveys/demo/compare/later" in client.get("/surveys/demo").data.decode()
    changes = client.get("/surveys/demo/compare/later").data.decode()
    assert changes.count("changed by") == 2 + 4 + 3 + 1
    # Loose reports: the page says crosstabs are unavailable, in words.
    loose = respondents_body(survey, 2, seed=12)["respondents"][0]["reports"]
    client.post(URL + "/reports/bulk", json={"reports": loose}, headers=operator_headers)
    unavailable = client.get("/surveys/demo/crosstab").data.decode()
    assert 'id="unavailable"' in unavailable and "cannot be joined" in unavailable
    client.post(
        "/api/v1/surveys",
        json={"definition": demo_survey_dict("secret"), "results_public": False},
        headers=operator_headers,
    )
    assert 'id="private-notice"' in client.get("/surveys/secret/crosstab").data.decode()


def test_relay_shuffling_per_question_makes_crosstabs_unavailable(storage, created_survey):
    """The relay's per-question shuffle unit (WORKING.md's shared format) forbids joining."""
    from types import SimpleNamespace

    from deniable.aggregator.crosstabs import unavailable_reason

    record = storage.get_survey("demo")
    assert unavailable_reason(storage, record) is None
    for unit, refused in (("question", True), ("submission", False)):
        relay = SimpleNamespace(url="https://relay.example", min_batch=1000, shuffle_unit=unit)
        survey = SimpleNamespace(id="demo", relay=relay)
        reason = unavailable_reason(storage, SimpleNamespace(id="demo", survey=survey))
        assert (reason is not None and "shuffles each question" in reason) == refused


# -- questions that may go unanswered: show or hide declined and not applicable --------------


@pytest.fixture
def questionnaire(storage, client):
    """The packaged demo survey (optional, conditional and scale questions), 300 simulated
    respondents (some decline, some are not asked), each one submission, and a second wave."""
    from deniable.aggregator import demo

    survey = demo.demo_survey()
    for survey_id, seed in ((survey.id, 3), ("later", 4)):
        wave = Survey.from_dict({**survey.to_dict(), "id": survey_id}) if seed == 4 else survey
        storage.create_survey(wave, results_public=True)
        rng = np.random.default_rng(seed)
        answers = demo.simulate_answers(wave, 300, rng)
        groups = []
        for person in answers:  # each respondent's path, randomized from the seeded rng
            values = wave.path_answers(person)
            reports = [
                {
                    "id": str(uuid.UUID(bytes=rng.bytes(16), version=4)),
                    "question": q.id,
                    "payload": q.oracle.encode(q.oracle.randomize(values[q.id], rng)),
                }
                for q in wave.questions
            ]
            groups.append({"reports": reports})
        headers = {"Authorization": f"Bearer {storage.create_operator_token('bulk')}"}
        for start in range(0, len(groups), 100):  # at most 1,000 reports a request
            body = {"respondents": groups[start : start + 100]}
            response = post_respondents(client, headers, body, survey_id)
            assert response.status_code == 201, response.get_data(as_text=True)
    return survey


def test_nonresponse_shown_or_hidden_through_the_api(client, questionnaire):
    base = f"/api/v1/surveys/{questionnaire.id}/crosstab?rows=burnout_cause&columns=commute"
    shown = client.get(base).get_json()
    assert shown["nonresponse"] == "show" and shown["share_of"] == "all"
    assert shown["rows"]["labels"][-2:] == ["declined", "not_applicable"]
    assert len(shown["cells"]) == 6 * 5 and shown["n"] == 300
    hidden = client.get(base + "&nonresponse=hide").get_json()
    assert hidden["share_of"] == "answered" and hidden["tightest"] == "ratio"
    assert hidden["rows"]["labels"] == ["Workload", "Meetings", "Management", "Something else"]
    assert hidden["rows"]["extras"] == ["declined", "not_applicable"]
    assert len(hidden["cells"]) == 4 * 5
    assert 0 <= hidden["answered"]["lower"] <= hidden["answered"]["upper"] <= 1
    assert all(0 <= c["lower"] <= c["upper"] <= 1 for c in hidden["cells"])
    table = list(
        csv.DictReader(io.StringIO(client.get(base + "&nonresponse=hide&format=csv").text))
    )
    assert len(table) == 20 and table[0]["row"] == "Workload" and table[0]["estimate"] != ""
    problem = assert_problem(client.get(base + "&nonresponse=maybe"), 400)
    assert "show or hide" in problem["detail"]
    cells = "&first_row=Workload&first_column=Car&second_row=Meetings&second_column=Car"
    problem = assert_problem(client.get(base + "&nonresponse=hide" + cells), 400)
    assert "nonresponse=show" in problem["detail"]
    assert "comparison" in client.get(base + cells).get_json()
    # A scale is a mean by the other question's answers; hiding drops the declined group.
    scale = f"/api/v1/surveys/{questionnaire.id}/crosstab?rows=recommend&columns=harassment"
    means = client.get(scale).get_json()
    assert (means["kind"], means["by"], means["of"]) == ("means", "harassment", "recommend")
    assert [c["label"] for c in means["categories"]] == ["no", "yes", "declined"]
    assert all(0 <= c["lower"] <= c["upper"] <= 10 for c in means["categories"])
    hidden = client.get(scale + "&nonresponse=hide").get_json()
    assert [c["label"] for c in hidden["categories"]] == ["no", "yes"]


def test_nonresponse_in_the_cli_and_the_dashboard(
    client, questionnaire, database, backend, capsys, tmp_path
):
    survey_id = questionnaire.id
    page = client.get(f"/surveys/{survey_id}/crosstab?rows=burnout_cause&columns=commute").text
    assert 'id="nonresponse"' in page
    assert 'aria-current="true" data-nonresponse="show">Show “Prefer not to say”' in page
    assert '<th scope="row">Prefer not to say</th>' in page
    assert '<th scope="row">Not asked (did not apply)</th>' in page
    hidden = client.get(
        f"/surveys/{survey_id}/crosstab?rows=burnout_cause&columns=commute&nonresponse=hide"
    ).text
    assert 'aria-current="true" data-nonresponse="hide">Hide them' in hidden
    assert 'id="answered-note"' in hidden
    assert "Prefer not to say</th>" not in hidden and hidden.count("data-estimate=") == 20
    assert "nonresponse=hide" in hidden  # the question links keep the choice
    assert client.get(f"/surveys/{survey_id}/crosstab?nonresponse=maybe").status_code == 400
    plain = client.get(f"/surveys/{survey_id}/crosstab?rows=commute&columns=burnout").text
    assert 'id="nonresponse"' not in plain  # neither question may go unanswered
    changes = client.get(f"/surveys/{survey_id}/compare/later").text
    assert "<b>Prefer not to say</b>" in changes and "among those who answered" in changes
    document = client.get(
        f"/api/v1/surveys/{survey_id}/compare?question=burnout_cause&with=later"
    ).get_json()
    assert document["method"] == "union"
    labels = [row["label"] for row in document["comparisons"]]
    assert labels[-2:] == ["declined", "not_applicable"]
    found = [row for row in document["comparisons"] if row["difference"] is not None]
    assert found and all(row["lower"] <= row["difference"] <= row["upper"] for row in found)
    scale = client.get(f"/api/v1/surveys/{survey_id}/compare?question=recommend&with=later")
    assert {"mean", "nps"} <= {row["label"] for row in scale.get_json()["comparisons"]}
    if backend != "sqlite":
        return  # the CLI reads the same storage; once is enough
    from deniable.aggregator import cli

    base = ["--database", database, "--signing-key", str(tmp_path / "key.pem")]
    assert cli.main([*base, "crosstab", survey_id, "burnout_cause", "commute"]) == 0
    assert "Prefer not to say" in capsys.readouterr().out
    arguments = [*base, "crosstab", survey_id, "burnout_cause", "commute", "--nonresponse", "hide"]
    assert cli.main(arguments) == 0
    out = capsys.readouterr().out
    assert "those who answered both questions" in out and "Prefer not to say" not in out
    assert cli.main([*base, "compare", survey_id, "later", "harassment"]) == 0
    assert "Prefer not to say" in capsys.readouterr().out


def test_an_optional_number_by_group_from_stored_reports(client, storage):
    """Reports of a number that may go unanswered (status and sign) decoded from storage,
    joined and published as its mean among those who answered, by the other question."""
    from ..shared.test_crosstab_nonresponse import QUESTIONNAIRE, batch, questionnaire_answers

    survey = Survey.from_dict(QUESTIONNAIRE)
    storage.create_survey(survey, results_public=True)
    rng = np.random.default_rng(21)
    columns = questionnaire_answers(survey, 200, rng)
    batches = {q.id: batch(q, columns[q.id], rng) for q in survey.questions}
    payloads = {q.id: q.oracle.encode_many(batches[q.id]) for q in survey.questions}
    groups = [
        {
            "reports": [
                {"id": str(uuid.uuid4()), "question": q.id, "payload": payloads[q.id][i]}
                for q in survey.questions
            ]
        }
        for i in range(200)
    ]
    headers = {"Authorization": f"Bearer {storage.create_operator_token('bulk')}"}
    for start in range(0, 200, 100):
        body = {"respondents": groups[start : start + 100]}
        assert post_respondents(client, headers, body, survey.id).status_code == 201
    url = f"/api/v1/surveys/{survey.id}/crosstab?rows=much&columns=smoke"
    document = client.get(url).get_json()
    assert (document["kind"], document["of"], document["among"]) == ("means", "much", "answered")
    assert document["n"] == 200
    assert [c["label"] for c in document["categories"]] == ["no", "yes", "declined"]
    # The same figures as the core computes from the reports before they were stored.
    from deniable.crosstab import axis, crosstab_statistics, question_crosstab

    much, smoke = survey.question("much"), survey.question("smoke")
    statistics = crosstab_statistics(
        axis(smoke.oracle), axis(much.oracle), batches["smoke"], batches["much"]
    )
    local = question_crosstab(much, smoke, statistics.transposed())
    for served, computed in zip(document["categories"], local["categories"], strict=True):
        assert served["lower"] == computed["lower"] and served["upper"] == computed["upper"]
        assert served["share"] == pytest.approx(computed["share"], abs=1e-12)
    hidden = client.get(url + "&nonresponse=hide").get_json()
    assert [c["label"] for c in hidden["categories"]] == ["no", "yes"]
    page = client.get(f"/surveys/{survey.id}/crosstab?rows=much&columns=smoke").text
    assert 'id="means"' in page and "Of whom answered" in page
    assert '<th scope="row">Prefer not to say</th>' in page
    assert "Hide them: the answers&#39; averages only" in page


def test_crosstab_and_compare_speak_in_the_results_words(
    client, questionnaire, database, backend, capsys, tmp_path
):
    """Question texts, not ids, head the table; yes and no read "No"/"Yes" as on the results
    page; whom n counts matches the table (non-response rows shown or left out)."""
    survey_id = questionnaire.id
    page = client.get(f"/surveys/{survey_id}/crosstab?rows=burnout_cause&columns=harassment").text
    assert "burnout_cause \\ harassment" not in page
    assert "What contributes most to it?" in page.split('id="joint"')[1].split("</thead>")[0]
    assert '<th scope="col">No</th>' in page and '<th scope="col">Yes</th>' in page
    assert '<th scope="col">no</th>' not in page
    assert "Not asked (did not apply)</th>" in page and "answered both" not in page
    hidden = client.get(
        f"/surveys/{survey_id}/crosstab?rows=burnout_cause&columns=harassment&nonresponse=hide"
    ).text
    assert '<th scope="col">No</th>' in hidden and "Not asked (did not apply)</th>" not in hidden
    means = client.get(f"/surveys/{survey_id}/crosstab?rows=burnout_cause&columns=recommend").text
    assert "Not asked (did not apply)</th>" in means and "answered both" not in means
    plain = client.get(f"/surveys/{survey_id}/crosstab?rows=commute&columns=burnout").text
    assert "respondents who answered both" in plain  # neither may go unanswered: true as said
    changes = client.get(f"/surveys/{survey_id}/compare/later").text
    assert "<b>No</b>" in changes and "<b>no</b>" not in changes
    if backend != "sqlite":
        return
    from deniable.aggregator import cli

    base = ["--database", database, "--signing-key", str(tmp_path / "key.pem")]
    assert cli.main([*base, "crosstab", survey_id, "burnout_cause", "harassment"]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[1]
    assert "burnout_cause" not in header and "What contributes most" in header
    assert header.split()[-2:] == ["No", "Yes"] or " No " in header
    assert "answered both" not in out and "counted as answers" in out
    assert "Not asked" in out
    hide = [*base, "crosstab", survey_id, "burnout_cause", "harassment", "--nonresponse", "hide"]
    assert cli.main(hide) == 0
    note = next(line for line in capsys.readouterr().out.splitlines() if "answered both" in line)
    assert "(n = " not in note and "respondents" in note  # n counts everyone, not "both"
    assert cli.main([*base, "crosstab", survey_id, "recommend", "harassment"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[3].startswith("No ") and "mean of recommend" not in out
    assert cli.main([*base, "compare", survey_id, "later", "burnout"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("Have you felt burnt out")
    assert any(line.startswith("No ") for line in out.splitlines())


def test_what_changed_offers_only_surveys_with_a_comparable_question(
    client, questionnaire, storage
):
    """A later survey that merely reuses a question id (another type or other options) is
    not offered; a copy of the survey is."""
    unrelated = Survey.from_dict(
        {
            "format": "deniable.survey/2",
            "id": "team_survey",
            "title": "Team survey",
            "questions": [
                {
                    "id": "tools",
                    "text": "Which tool do you use most?",
                    "type": "single_choice",
                    "options": ["Hammer", "Saw"],
                    "epsilon": 1.0,
                }
            ],
        }
    )
    storage.create_survey(unrelated, results_public=True)
    page = client.get(f"/surveys/{questionnaire.id}").text
    assert f"/surveys/{questionnaire.id}/compare/later" in page
    assert "/compare/team_survey" not in page and "Team survey" not in page
