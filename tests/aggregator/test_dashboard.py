"""The dashboard: SVG rendering (pure), the pages against the API, and a real browser."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
import uuid
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
import requests

from deniable.aggregator import cli, demo
from deniable.aggregator.dashboard import svg
from deniable.results import question_results
from deniable.survey import Survey

from .conftest import post_bulk

TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:\d\d)?")

SVG_NS = "{http://www.w3.org/2000/svg}"
HOSTILE = "<script>alert('x')</script> & \"quoted\""


def _survey(label: str = "Red") -> Survey:
    return Survey.from_dict(
        {
            "format": "deniable.survey/1",
            "id": "unit",
            "title": "Unit",
            "questions": [
                {
                    "id": "colour",
                    "type": "single_choice",
                    "text": "Colour?",
                    "epsilon": 2.0,
                    "options": [label, "Green", "Blue"],
                    "mechanism": "grr",
                },
                {
                    "id": "hours",
                    "type": "numeric",
                    "text": "Hours?",
                    "epsilon": 1.0,
                    "lo": 0,
                    "hi": 40,
                },
                {"id": "ok", "type": "yes_no", "text": "OK?", "epsilon": 1.0},
            ],
        }
    )


def _result(question, values, seed: int = 7) -> dict:
    rng = np.random.default_rng(seed)
    batch = question.oracle.randomize_many(np.asarray(values), rng)
    return question_results(question, question.oracle.statistics(batch), len(values))


def shown_bounds(result: dict, item: dict) -> tuple[float, float]:
    """The interval a chart must show: the tightest family's, named by the result."""
    family = result["tightest"]
    if family in ("chebyshev", "ratio"):  # ratio: deniable.nonresponse's lower/upper
        return item["lower"], item["upper"]
    return item[f"{family}_lower"], item[f"{family}_upper"]


def _parse(text: str) -> ET.Element:
    root = ET.fromstring(text)  # raises if the markup is not well-formed XML
    assert root.tag == f"{SVG_NS}svg"
    return root


def test_bar_chart_escapes_labels_and_titles() -> None:
    question = _survey(HOSTILE).question("colour")
    result = _result(question, [0] * 300 + [1] * 200)
    text = svg.bar_chart(result, title=HOSTILE)
    assert "<script>" not in text
    assert "&lt;script&gt;" in text
    root = _parse(text)
    labels = [g.get("data-label") for g in root.iter(f"{SVG_NS}g") if g.get("class") == "bar"]
    assert labels == [HOSTILE, "Green", "Blue"]  # attribute round-trips to the exact label
    assert root.find(f"{SVG_NS}title").text == HOSTILE


def test_bar_chart_data_attributes_are_the_results_at_full_precision() -> None:
    question = _survey().question("colour")
    result = _result(question, [0] * 500 + [1] * 300 + [2] * 200)
    root = _parse(svg.bar_chart(result))
    bars = [g for g in root.iter(f"{SVG_NS}g") if g.get("class") == "bar"]
    assert len(bars) == 3
    for bar, category in zip(bars, result["categories"], strict=True):
        assert float(bar.get("data-estimate")) == category["estimate"]
        assert bar.get("data-interval") == result["tightest"]
        assert (float(bar.get("data-lower")), float(bar.get("data-upper"))) == shown_bounds(
            result, category
        )
        whisker = bar.find(f"{SVG_NS}g")
        assert whisker.get("class") == "whisker"
        x1 = float(whisker.find(f"{SVG_NS}line").get("x1"))
        x2 = float(whisker.find(f"{SVG_NS}line").get("x2"))
        assert x1 <= x2


def test_bar_lengths_follow_estimates_and_raw_values_outside_0_1_are_clipped_and_shown() -> None:
    result = {
        "question": "q",
        "type": "single_choice",
        "beta": 0.05,
        "n": 3,
        "categories": [
            {"label": "a", "estimate": 0.8, "lower": 0.6, "upper": 1.0},
            {"label": "b", "estimate": 0.4, "lower": 0.2, "upper": 0.6},
            {"label": "c", "estimate": -1.54, "lower": 0.0, "upper": 0.1},
            {"label": "d", "estimate": 2.54, "lower": 0.9, "upper": 1.0},
        ],
    }
    root = _parse(svg.bar_chart(result))
    bars = [g for g in root.iter(f"{SVG_NS}g") if g.get("class") == "bar"]
    rects = [g.find(f"{SVG_NS}rect") for g in bars]
    widths = [float(r.get("width")) for r in rects]
    assert widths[0] == pytest.approx(2 * widths[1], rel=0.01)
    assert widths[2] <= 0.5  # clipped to 0: no bar drawn left of the axis
    assert widths[3] == pytest.approx(widths[0] / 0.8, rel=0.01)  # clipped to 100%
    assert float(rects[2].get("x")) >= float(rects[1].get("x"))
    assert rects[2].get("fill") == rects[3].get("fill") == svg.NEGATIVE_FILL
    assert [float(g.get("data-shown")) for g in bars] == [0.8, 0.4, 0.0, 1.0]
    assert [float(g.get("data-estimate")) for g in bars] == [0.8, 0.4, -1.54, 2.54]
    ticks = [t.text for t in root.iter(f"{SVG_NS}text") if t.get("font-size") == "11"][1:]
    assert min(float(t.rstrip("%")) for t in ticks) == 0
    assert max(float(t.rstrip("%")) for t in ticks) == 100  # the axis stays 0-100%
    raw = [t.text for t in root.iter(f"{SVG_NS}tspan") if t.get("class") == "raw"]
    assert raw == [" (raw -154.0%)", " (raw 254.0%)"]


@pytest.mark.parametrize("mean", [-7.5, 55.0])
def test_a_mean_outside_its_range_is_drawn_at_the_edge_with_a_marker(mean: float) -> None:
    result = {
        "question": "hours",
        "type": "numeric",
        "beta": 0.05,
        "n": 3,
        "mean": mean,
        "lower": 0.0,
        "upper": 40.0,
    }
    root = _parse(svg.mean_chart(result, 0, 40))
    (group,) = [g for g in root.iter(f"{SVG_NS}g") if g.get("class") == "mean"]
    assert float(group.get("data-mean")) == mean
    assert float(group.get("data-shown")) == (0.0 if mean < 0 else 40.0)
    ticks = [
        float(t.text)
        for t in root.iter(f"{SVG_NS}text")
        if t.get("font-size") == "11" and "answer range" not in (t.text or "")
    ]
    dot = float(group.find(f"{SVG_NS}circle").get("cx"))
    positions = [
        float(line.get("x1"))
        for line in root.iter(f"{SVG_NS}line")
        if line.get("stroke") == svg.GRID
    ]
    assert min(ticks) == 0 and max(ticks) == 40
    assert min(positions) - 0.1 <= dot <= max(positions) + 0.1  # never off the axis
    assert [p.get("class") for p in group.iter(f"{SVG_NS}path")] == ["clipped-marker"]
    raw = [t.text for t in group.iter(f"{SVG_NS}tspan") if t.get("class") == "raw"]
    assert raw == [f" (raw {svg.format_number(mean)})"]


def test_mean_chart_places_the_mean_and_its_interval_on_the_answer_range() -> None:
    question = _survey().question("hours")
    result = _result(question, np.full(2000, 30.0))
    text = svg.mean_chart(result, 0, 40, title="Hours <per> week")
    root = _parse(text)
    (group,) = [g for g in root.iter(f"{SVG_NS}g") if g.get("class") == "mean"]
    assert float(group.get("data-mean")) == result["mean"]
    assert (float(group.get("data-lower")), float(group.get("data-upper"))) == shown_bounds(
        result, result
    )
    dot = group.find(f"{SVG_NS}circle")
    line = group.find(f"{SVG_NS}g").find(f"{SVG_NS}line")
    assert float(line.get("x1")) <= float(dot.get("cx")) <= float(line.get("x2"))
    assert "Hours &lt;per&gt; week" in text


def test_chart_for_dispatches_and_draws_nothing_without_reports() -> None:
    survey = _survey()
    empty = question_results(survey.question("ok"), np.zeros(2, dtype=np.int64), 0)
    assert svg.chart_for(empty, survey.question("ok").to_dict()) == ""
    yes_no = _result(survey.question("ok"), [1] * 80 + [0] * 20)
    assert 'class="chart bars"' in svg.chart_for(yes_no, survey.question("ok").to_dict())
    hours = _result(survey.question("hours"), [10.0] * 100)
    assert 'class="chart mean-chart"' in svg.chart_for(hours, survey.question("hours").to_dict())


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0.0, "0.0%"), (0.12345, "12.3%"), (-0.05, "-5.0%"), (1.0, "100.0%")],
)
def test_format_share(value: float, expected: str) -> None:
    assert svg.format_share(value) == expected


# -- the pages, against the API ----------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"


class DataElements(HTMLParser):
    """Every element carrying data-* attributes, as (tag, class, {attr: value})."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, str, dict[str, str]]] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        data = {k: v for k, v in attributes.items() if k.startswith("data-") and v is not None}
        if data:
            self.elements.append((tag, attributes.get("class") or "", data))

    handle_startendtag = handle_starttag


def parse_page(text: str) -> DataElements:
    parser = DataElements()
    parser.feed(text)
    return parser


def page_numbers(text: str) -> dict[str, dict]:
    """Per question id: its data-n/epsilon/mechanism, the bars, the means and the net promoter
    scores drawn, and the rows said in words (``data-row``)."""
    questions: dict[str, dict] = {}
    current = None
    for tag, cls, data in parse_page(text).elements:
        if "question" in cls.split() and tag == "section":
            current = questions.setdefault(
                data["data-question"], {**data, "bars": [], "means": [], "nps": [], "rows": []}
            )
        elif current is None:
            continue
        elif cls == "bar":
            current["bars"].append(data)
        elif cls == "mean":
            current["means"].append(data)
        elif cls == "nps":
            current["nps"].append(data)
        elif "data-row" in data:
            current["rows"].append(data)
    return questions


def assert_page_matches_results(page: str, results: dict) -> None:
    """The page shows every question's numbers as the results JSON has them: the charts'
    ``data-*`` at full precision, and (optional, conditional and scale questions) every row
    in words, with its numbers as people read them."""
    from .test_dashboard_questionnaire import assert_rows_shown

    shown = page_numbers(page)
    assert list(shown) == [q["question"] for q in results["questions"]]
    for result in results["questions"]:
        result = svg.charted(result)  # the chart's part; assert_rows_shown checks the rest
        numbers = shown[result["question"]]
        assert int(numbers["data-n"]) == result["n"]
        assert float(numbers["data-epsilon"]) == result["epsilon"]
        assert numbers["data-mechanism"] == result["mechanism"]
        if "categories" in result:
            assert [b["data-label"] for b in numbers["bars"]] == [
                c["label"] for c in result["categories"]
            ]
            for bar, category in zip(numbers["bars"], result["categories"], strict=True):
                assert float(bar["data-estimate"]) == category["estimate"]
                assert bar["data-interval"] == result["tightest"]
                assert (float(bar["data-lower"]), float(bar["data-upper"])) == shown_bounds(
                    result, category
                )
        else:
            plain = [m for m in numbers["means"] if "data-label" not in m]
            assert len(plain) == 1  # the SVG group (the text has its own copy)
            mean = plain[0]
            assert float(mean["data-mean"]) == result["mean"]
            assert (float(mean["data-lower"]), float(mean["data-upper"])) == shown_bounds(
                result, result
            )
    assert_rows_shown(page, results)


def fill(client, survey: Survey, count: int, seed: int = 11) -> None:
    """``count`` respondents' reports through the API, in batches."""
    rng = np.random.default_rng(seed)
    reports = []
    for question in survey.questions:
        if question.type == "numeric":
            values = rng.uniform(question.oracle.lo, question.oracle.hi, count)
        elif question.type == "multiple_choice":
            values = (rng.random((count, len(question.options))) < 0.3).astype(np.int64)
        else:
            values = rng.choice(
                question.domain_size, count, p=rng.dirichlet(np.ones(question.domain_size))
            )
        payloads = question.oracle.encode_many(question.oracle.randomize_many(values, rng))
        reports += [
            {"id": str(uuid.uuid4()), "question": question.id, "payload": p} for p in payloads
        ]
    for start in range(0, len(reports), 1000):
        response = post_bulk(client, survey.id, reports[start : start + 1000])
        assert response.status_code == 201, response.get_data(as_text=True)


@pytest.fixture
def dash(app, storage):
    """The shared ``app`` (SQLite and PostgreSQL) with the packaged demo survey."""
    survey = demo.demo_survey()
    storage.create_survey(survey, results_public=True)
    return app, app.test_client(), survey


def test_survey_page_shows_the_api_numbers(dash) -> None:
    app, client, survey = dash
    fill(client, survey, 700)
    page = client.get(f"/surveys/{survey.id}")
    assert page.status_code == 200 and page.mimetype == "text/html"
    results = client.get(f"/api/v1/surveys/{survey.id}/results").get_json()
    text = page.get_data(as_text=True)
    assert_page_matches_results(text, results)
    assert "With probability at least 95% the true share lies inside each bar" in text
    assert "Shares and means are of all respondents, except where a chart says" in text
    # One chart per question, and a 0-10 scale's mean and net promoter score.
    charts = len(survey.questions) + 2
    assert text.count('<svg xmlns="http://www.w3.org/2000/svg" class="chart') == charts
    assert text.count("<svg") == charts + 1  # and the link's QR code
    article = next(d for t, c, d in parse_page(text).elements if t == "article")
    assert int(article["data-n-reports"]) == results["n_reports"] == 700 * len(survey.questions)
    assert int(article["data-respondents"]) == 700
    assert "<b>700</b> respondents" in text
    assert float(article["data-total-epsilon"]) == survey.total_epsilon


def test_beta_in_the_query_changes_the_intervals_like_the_api(dash) -> None:
    _, client, survey = dash
    fill(client, survey, 300)
    wide = page_numbers(client.get(f"/surveys/{survey.id}").get_data(as_text=True))
    narrow_page = client.get(f"/surveys/{survey.id}?beta=0.2").get_data(as_text=True)
    results = client.get(f"/api/v1/surveys/{survey.id}/results?beta=0.2").get_json()
    assert_page_matches_results(narrow_page, results)
    assert "at least 80%" in narrow_page
    narrow = page_numbers(narrow_page)
    assert float(narrow["burnout"]["bars"][1]["data-upper"]) < float(
        wide["burnout"]["bars"][1]["data-upper"]
    )
    assert client.get(f"/surveys/{survey.id}?beta=2").status_code == 400


def test_pages_are_self_contained_and_locked_down(dash) -> None:
    _, client, survey = dash
    fill(client, survey, 50)
    for url in ("/", f"/surveys/{survey.id}"):
        response = client.get(url)
        text = response.get_data(as_text=True)
        assert "default-src 'none'" in response.headers["Content-Security-Policy"]
        tags = parse_page(text).tags
        assert not [t for t, _ in tags if t in ("script", "link", "img", "iframe")]
        external = [
            a.get("href") or a.get("src")
            for _, a in tags
            if (a.get("href") or a.get("src") or "").startswith(("http:", "https:", "//"))
        ]
        assert external == []


def test_index_lists_surveys_and_escapes_titles(dash) -> None:
    app, client, survey = dash
    hostile = Survey.from_dict(
        {**survey.to_dict(), "id": "hostile", "title": "<script>alert(1)</script>"}
    )
    app.extensions["deniable.storage"].create_survey(hostile, results_public=True)
    fill(client, survey, 20)
    text = client.get("/").get_data(as_text=True)
    rows = {d["data-survey"]: d for t, c, d in parse_page(text).elements if t == "tr"}
    assert set(rows) == {survey.id, "hostile"}
    assert int(rows[survey.id]["data-n-reports"]) == 20 * len(survey.questions)
    assert int(rows[survey.id]["data-respondents"]) == 20  # not one per report
    assert f'href="/surveys/{survey.id}"' in text
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    page = client.get("/surveys/hostile").get_data(as_text=True)
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_a_survey_in_another_language_is_marked_with_it(dash) -> None:
    """The pages' own words are English; a German survey's title, description and questions
    carry lang="de" (WCAG 2.2, 3.1.2 language of parts), an English survey's nothing."""
    from tests.shared.test_translations import german

    app, client, survey = dash
    other = Survey.from_dict(german())
    app.extensions["deniable.storage"].create_survey(other, results_public=True)
    fill(client, other, 30)
    page = client.get(f"/surveys/{other.id}").get_data(as_text=True)
    assert '<html lang="en">' in page
    assert f'<span lang="de">{other.title}</span>' in page
    for question in other.questions:
        assert f'<h2 lang="de">{question.text}</h2>' in page
    index = client.get("/").get_data(as_text=True)
    assert f'lang="de">{other.title}</a>' in index
    english = client.get(f"/surveys/{survey.id}").get_data(as_text=True)
    assert 'lang="de"' not in english and "<h2 lang" not in english


def test_private_results_show_a_notice_and_no_numbers(dash) -> None:
    app, client, survey = dash
    private = Survey.from_dict({**survey.to_dict(), "id": "private"})
    app.extensions["deniable.storage"].create_survey(private, results_public=False)
    fill(client, private, 100)
    text = client.get("/surveys/private").get_data(as_text=True)
    assert 'id="private-notice"' in text and "Results are private" in text
    assert "data-estimate" not in text and "data-mean" not in text and 'class="chart' not in text
    assert client.get("/api/v1/surveys/private/results").status_code == 401
    # Regression: the live count of a private survey timed each submission.
    # Timestamps are dropped first: their digits may spell "100" or "400" by chance.
    head = TIMESTAMP.sub("", text.split('id="survey"')[1][:400])
    assert 'data-n-reports=""' in head and "100" not in head
    index = client.get("/").get_data(as_text=True)
    row = TIMESTAMP.sub("", index.split('data-survey="private"')[1].split("</tr>")[0])
    assert 'data-n-reports=""' in row and 'data-respondents=""' in row
    assert "400" not in row and "100" not in row


def test_survey_list_is_paginated(dash) -> None:
    app, client, survey = dash
    storage = app.extensions["deniable.storage"]
    for index in range(3):
        storage.create_survey(
            Survey.from_dict({**survey.to_dict(), "id": f"more-{index}"}), results_public=True
        )
    first = client.get("/api/v1/surveys?limit=3").get_json()
    assert [s["id"] for s in first["surveys"]] == [survey.id, "more-0", "more-1"]
    assert first["page"] == 1 and first["limit"] == 3
    second = client.get(first["next"]).get_json()
    assert [s["id"] for s in second["surveys"]] == ["more-2"] and second["next"] is None
    for bad in ("page=0", "limit=0", "limit=201", "page=x", "limit=%00"):
        assert client.get(f"/api/v1/surveys?{bad}").status_code == 400
    page = client.get("/?limit=2&page=2").get_data(as_text=True)
    assert 'data-survey="more-1"' in page and 'data-survey="more-2"' in page
    assert 'href="/?page=1&amp;limit=2"' in page and 'rel="next"' not in page
    assert survey.id not in page.split("<table")[1]
    assert 'rel="next"' in client.get("/?limit=2").get_data(as_text=True)


def test_empty_survey_and_unknown_survey(dash) -> None:
    _, client, survey = dash
    text = client.get(f"/surveys/{survey.id}").get_data(as_text=True)
    assert text.count("No reports yet.") == len(survey.questions) and 'class="chart' not in text
    missing = client.get("/surveys/<nope>")
    assert missing.status_code == 404 and missing.mimetype == "text/html"
    assert "&lt;nope&gt;" in missing.get_data(as_text=True)
    assert client.get("/api/v1/surveys/nope").status_code == 404  # API 404s stay problem+json


# -- a real browser against a real server ------------------------------------------------


def _chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed")
def test_dashboard_in_headless_chromium(tmp_path: Path) -> None:
    directory = tmp_path / "server"
    database, key = directory / "deniable.sqlite3", directory / "key.pem"
    assert cli.main(["--database", str(database), "--signing-key", str(key), "init"]) == 0
    definition = tmp_path / "survey.json"
    definition.write_text(json.dumps(demo.demo_survey().to_dict()))
    assert (
        cli.main(
            [
                "--database",
                str(database),
                "--signing-key",
                str(key),
                "create-survey",
                str(definition),
            ]
        )
        == 0
    )
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = demo.start_server({"DATABASE": str(database), "SIGNING_KEY_PATH": str(key)}, port)
    base = f"http://127.0.0.1:{port}"
    try:
        survey = demo.demo_survey()
        answers = demo.simulate_answers(survey, 400, np.random.default_rng(2))
        bodies = [demo.respondent_reports(survey, a) for a in answers]
        assert demo.submit_all(base, survey.id, bodies) == 400 * len(survey.questions)
        results = requests.get(f"{base}/api/v1/surveys/{survey.id}/results", timeout=30).json()
        url = f"{base}/surveys/{survey.id}"
        screenshot = tmp_path / "dashboard.png"
        started = time.monotonic()
        shot = _chromium(
            "--screenshot=" + str(screenshot),
            "--window-size=1200,1600",
            url,
            profile=tmp_path / "profile-1",
        )
        assert shot.returncode == 0, shot.stderr[-2000:]
        dom = _chromium("--dump-dom", url, profile=tmp_path / "profile-2")
        assert dom.returncode == 0, dom.stderr[-2000:]
    finally:
        demo.stop_server(server)
    data = screenshot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1200, 1600)
    assert len(data) > 30_000, "the screenshot is (nearly) blank"
    assert_page_matches_results(dom.stdout, results)  # what the browser built, not our HTML
    assert "<svg" in dom.stdout and "Workplace wellbeing" in dom.stdout
    keep = os.environ.get("DENIABLE_KEEP_SCREENSHOT")
    if keep:
        shutil.copy(screenshot, keep)
    assert time.monotonic() - started < 240


def test_small_samples_say_so_in_words(dash) -> None:
    _, client, survey = dash
    fill(client, survey, 3)
    text = client.get(f"/surveys/{survey.id}").get_data(as_text=True)
    notes = [d for t, c, d in parse_page(text).elements if "precision" in c.split()]
    assert len(notes) == len(survey.questions)
    assert {d["data-precision"] for d in notes} == {"uninformative"}
    assert text.count("Too few respondents to say anything useful here") == len(survey.questions)
    assert "respondents are needed for ±10 points" in text
    numbers = page_numbers(text)
    for question in numbers.values():
        for bar in question["bars"]:
            assert 0.0 <= float(bar["data-shown"]) <= 1.0
        for mean in question["means"]:
            assert 0.0 <= float(mean["data-shown"]) <= 20.0


def test_large_samples_have_no_small_sample_warning(dash) -> None:
    _, client, survey = dash
    fill(client, survey, 700)
    results = client.get(f"/api/v1/surveys/{survey.id}/results").get_json()
    text = client.get(f"/surveys/{survey.id}").get_data(as_text=True)
    for result in results["questions"]:
        assert result["precision"] in ("ok", "imprecise", "uninformative")
    flagged = sum(r["precision"] != "ok" for r in results["questions"])
    assert text.count('class="notice precision"') == flagged
    assert "The intervals are about the people who answered" in text


def test_the_maximum_likelihood_shares_are_said_in_words_where_published() -> None:
    import numpy as np

    from deniable.aggregator.dashboard import present
    from deniable.estimation import estimate_frequencies
    from deniable.mechanisms import GRR, OUE

    labels = ["car", "bus", "bike"]
    grr = estimate_frequencies(GRR(epsilon=1.0, domain_size=3), np.array([30, 5, 15]), 50)
    result = {"type": "single_choice", **grr.to_dict(labels)}
    sentence = present.likelihood_sentence(result)
    ibu = grr.postprocessed["ibu"]
    assert sentence.startswith("Most likely shares given the reports: car ")
    assert f"car {100 * ibu[0]:.1f}%" in sentence and "add up to 100%" in sentence
    oue = estimate_frequencies(OUE(epsilon=1.0, domain_size=3), np.array([30, 5, 15]), 50)
    assert present.likelihood_sentence({"type": "single_choice", **oue.to_dict(labels)}) == ""
