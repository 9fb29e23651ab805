"""The survey page's optional, conditional and scale questions: every published row once, with
the JSON's number and interval, said in plain words (deniable.nonresponse's rows)."""

from __future__ import annotations

import re
import uuid
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import numpy as np
import pytest

from deniable.aggregator import demo
from deniable.aggregator.dashboard import present, svg
from deniable.aggregator.respond.words import answer_words, translator
from deniable.results import question_results
from deniable.survey import Survey

from ..shared.questionnaire_vectors import QUESTIONNAIRE_SURVEY
from .conftest import post_bulk
from .test_dashboard import HOSTILE, SVG_NS, page_numbers

EXTRAS = ("declined", "not_applicable")


class RowTexts(HTMLParser):
    """The words of every element carrying ``data-row``, per question: (attributes, text)."""

    def __init__(self) -> None:
        super().__init__()
        self.question = ""
        self.rows: dict[str, list[tuple[dict, str]]] = {}
        self._open: list[list] = []  # [tag, depth, attributes, text pieces]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "section" and "data-question" in attributes:
            self.question = str(attributes["data-question"])
        for entry in self._open:
            entry[1] += entry[0] == tag
        if "data-row" in attributes:
            self._open.append([tag, 1, attributes, []])

    def handle_endtag(self, tag: str) -> None:
        for entry in list(self._open):
            if entry[0] == tag:
                entry[1] -= 1
                if entry[1] == 0:
                    self._open.remove(entry)
                    text = " ".join("".join(entry[3]).split())
                    self.rows.setdefault(self.question, []).append((entry[2], text))

    def handle_data(self, data: str) -> None:
        for entry in self._open:
            entry[3].append(data)


def _said(row: dict) -> list[str]:
    """How people read a row's estimate and interval."""
    if row["label"] in svg.POINT_ROWS:
        return [svg.format_score(row["label"], row[key]) for key in ("estimate", "lower", "upper")]
    return [
        svg.format_share(row["estimate"]),
        f"[{svg.format_share(row['lower'])}, {svg.format_share(row['upper'])}]",
    ]


def assert_rows_shown(page: str, results: dict) -> None:
    """Every row of every optional, conditional and scale question is said once in words
    (``data-row``) with the JSON's numbers, except the shares a bar chart carries itself; a
    scale's mean and NPS are also drawn with the same numbers; no declined or not-applicable
    share is drawn as a bar among those who answered."""
    shown, texts = page_numbers(page), RowTexts()
    texts.feed(page)
    for result in results["questions"]:
        rows = result.get("categories") or []
        if not rows or "share_of" not in rows[0] or result.get("estimate", 0) is None:
            continue
        numbers = shown[result["question"]]
        said = {
            attributes["data-row"]: (attributes, text)
            for attributes, text in texts.rows.get(result["question"], [])
        }
        assert len(said) == len(texts.rows.get(result["question"], [])), "each row once"
        assert not {b["data-label"] for b in numbers["bars"]} & set(EXTRAS)
        for row in rows:
            if row["estimate"] is None:
                continue
            words_needed = (
                row["label"] in EXTRAS
                or result["type"] == "scale"
                or (row["label"] in svg.POINT_ROWS and result["type"] != "numeric")
            )
            if not words_needed:
                continue
            assert row["label"] in said, (result["question"], row["label"])
            attributes, text = said[row["label"]]
            assert float(attributes["data-estimate"]) == row["estimate"]
            assert float(attributes["data-lower"]) == row["lower"]
            assert float(attributes["data-upper"]) == row["upper"]
            assert attributes["data-share-of"] == row["share_of"]
            for words in _said(row):
                assert words in text, (result["question"], row["label"], words, text)
            if row["label"] == "not_applicable":  # and the share it applied to
                asked = f"[{svg.format_share(1 - row['upper'])}, "
                assert f"Asked of {svg.format_share(1 - row['estimate'])}" in text and asked in text
        drawn = {"mean": numbers["means"], "nps": numbers["nps"]}
        for row in rows:
            if result["type"] == "scale" and row["label"] in drawn and row["estimate"] is not None:
                (group,) = [g for g in drawn[row["label"]] if g.get("data-label") == row["label"]]
                value = group.get("data-mean", group.get("data-estimate"))
                assert float(value) == row["estimate"]
                assert (float(group["data-lower"]), float(group["data-upper"])) == (
                    row["lower"],
                    row["upper"],
                )


def _questionnaire(hostile: bool = True) -> Survey:
    """The questionnaire vectors' survey (an optional yes/no and number, a conditional 7-point
    scale, an optional 0-10 scale, an optional conditional multiple choice, a 5-point scale),
    with an operator's hostile text in an option and an anchor."""
    definition = {**QUESTIONNAIRE_SURVEY, "id": "quest"}
    if hostile:
        questions = []
        for question in definition["questions"]:
            if question["id"] == "commute":
                question = {**question, "options": ["Car", "Bus", HOSTILE]}
            if question["id"] == "seven":
                question = {**question, "anchors": {"low": HOSTILE, "high": "Agree"}}
            questions.append(question)
        definition["questions"] = questions
    return Survey.from_dict(definition)


def _answer(client, survey: Survey, respondents: int, seed: int = 3) -> None:
    """``respondents`` simulated people's reports, each walking the survey's paths, randomized
    from a seeded generator (reproducible pages)."""
    rng = np.random.default_rng(seed)
    reports = []
    for answers in demo.simulate_answers(survey, respondents, rng):
        values = survey.path_answers(answers)
        reports += [
            {
                "id": str(uuid.UUID(bytes=rng.bytes(16), version=4)),
                "question": q.id,
                "payload": q.oracle.encode(q.oracle.randomize(values[q.id], rng)),
            }
            for q in survey.questions
        ]
    for start in range(0, len(reports), 1000):
        response = post_bulk(client, survey.id, reports[start : start + 1000])
        assert response.status_code in (200, 201, 202), response.get_data(as_text=True)


@pytest.fixture
def questionnaire(app, storage):
    """The questionnaire's page and results JSON after 600 respondents (SQLite, PostgreSQL)."""
    client, survey = app.test_client(), _questionnaire()
    storage.create_survey(survey, results_public=True)
    _answer(client, survey, 600)
    page = client.get(f"/surveys/{survey.id}").get_data(as_text=True)
    results = client.get(f"/api/v1/surveys/{survey.id}/results").get_json()
    return page, results


def test_every_row_is_on_the_page_with_the_jsons_numbers(questionnaire) -> None:
    from .test_dashboard import assert_page_matches_results

    page, results = questionnaire
    assert_page_matches_results(page, results)
    texts = RowTexts()
    texts.feed(page)
    said = {q: [a["data-row"] for a, _ in rows] for q, rows in texts.rows.items()}
    # Each part in its place: a scale's points, mean and NPS; who was asked; who declined.
    assert said["recommend"] == [*map(str, range(11)), "declined", "mean", "nps"]
    assert said["seven"] == [*map(str, range(1, 8)), "not_applicable", "mean"]
    assert said["amount"] == ["not_applicable", "declined"]
    assert said["smoke"] == ["declined"]
    assert "commute" not in said  # a required choice: its bars say it all


def test_optional_questions_say_whom_their_shares_count(questionnaire) -> None:
    page, _ = questionnaire
    sections = {
        m.group(1): m.group(0)
        for m in re.finditer(
            r'<section class="card question" id="q-([\w-]+)".*?</section>', page, re.DOTALL
        )
    }
    for question in ("smoke", "reasons", "recommend", "seven", "five"):
        section = sections[question]
        assert "Share among those who answered" in section, question  # the chart's legend
        assert "Estimated share" not in section, question
    for question in ("reasons", "recommend", "seven", "five"):  # the sentence under the chart
        assert "These are shares among those who answered." in sections[question], question
    assert "Estimated mean among those who answered:" in sections["amount"]
    assert "Mean among those who answered (dot)" in sections["amount"]
    # Who declined among those asked, and whom the question applied to, in words.
    assert re.search(r"[\d.]+% of those asked chose “Prefer not to say” \[", sections["amount"])
    assert re.search(r"[\d.]+% of respondents chose “Prefer not to say” \[", sections["smoke"])
    assert re.search(r"Asked of [\d.]+% of respondents \[[\d.]+%, [\d.]+%\]", sections["seven"])
    assert "Who was asked (95% intervals in brackets)" in sections["seven"]
    assert "Who chose not to answer (95% intervals" in sections["smoke"]
    # A 0-10 scale: the net promoter score in words; a 7-point one has none.
    assert (
        "the share who answered 9 or 10 minus the share who answered 0 to 6, among those who "
        "answered, in points from -100 to +100" in sections["recommend"]
    )
    assert "promoter" not in sections["seven"]
    # The page's own explanation says all of it once, still correct.
    assert page.count("whatever the true answers are") == 1
    assert "except where a chart says “among those who answered”" in page
    # The operator's text is escaped everywhere it is shown (chart, list, anchors).
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_yes_and_no_are_the_respond_pages_words() -> None:
    """One wording with the respond page (its catalogue), while the data keeps "no"/"yes"."""
    t = translator("en")
    survey = _questionnaire(hostile=False)
    smoke = survey.question("smoke")
    words = answer_words(smoke.to_dict())
    assert (words["no"], words["yes"]) == (t("no"), t("yes")) == ("No", "Yes")
    assert (words["declined"], words["not_applicable"]) == (t("prefer_not"), t("not_asked"))
    result = question_results(
        smoke,
        smoke.oracle.statistics(
            smoke.oracle.randomize_many(
                np.array([0] * 200 + [1] * 300 + [2] * 60), np.random.default_rng(1)
            )
        ),
        560,
    )
    root = ET.fromstring(svg.chart_for(result, smoke.to_dict(), words, present.AMONG))
    bars = [g for g in root.iter(f"{SVG_NS}g") if g.get("class") == "bar"]
    assert [g.get("data-label") for g in bars] == ["no", "yes"]
    assert [g.find(f"{SVG_NS}text").text for g in bars] == ["No", "Yes"]
    assert {g.get("data-share-of") for g in bars} == {"answered"}


def _scale_result(points: int = 11, seed: int = 5) -> tuple[dict, dict]:
    survey = _questionnaire(hostile=False)
    question = survey.question("recommend" if points == 11 else "seven")
    rng = np.random.default_rng(seed)
    values = rng.integers(0, question.domain_size, 3000)
    statistics = question.oracle.statistics(question.oracle.randomize_many(values, rng))
    return question_results(question, statistics, len(values)), question.to_dict()


def test_a_scale_is_drawn_as_a_scale_with_its_mean_on_its_own_axis() -> None:
    result, question = _scale_result()
    labels = [str(p) for p in range(11)]
    words = answer_words(question, labels)
    assert (words["low"], words["high"]) == tuple(translator("en")("scale_nps").split(", "))
    columns = ET.fromstring(svg.chart_for(result, question, {**words, "low": HOSTILE}))
    assert columns.get("class") == "chart columns"
    bars = [g for g in columns.iter(f"{SVG_NS}g") if g.get("class") == "bar"]
    assert [g.get("data-label") for g in bars] == labels  # in the scale's order
    middles = [
        float(r.get("x")) + float(r.get("width")) / 2
        for r in (g.find(f"{SVG_NS}rect") for g in bars)
    ]
    assert middles == sorted(middles)  # left to right
    anchors = [t for t in columns.iter(f"{SVG_NS}text") if t.get("class") == "anchor"]
    assert anchors[0].text.startswith(HOSTILE[:20]) and anchors[0].get("text-anchor") == "start"
    assert anchors[-1].get("text-anchor") == "end"
    rows = {row["label"]: row for row in result["categories"]}
    shares = {row["label"]: row for row in svg.charted(result)["categories"]}
    for bar in bars:
        row = shares[bar.get("data-label")]
        assert float(bar.get("data-estimate")) == row["estimate"]
        assert (float(bar.get("data-lower")), float(bar.get("data-upper"))) == (
            row["lower"],
            row["upper"],
        )
    (score, nps) = present.scale_scores(question, result, labels, present.AMONG)
    mean = ET.fromstring(str(score["chart"]))
    (dot,) = [g for g in mean.iter(f"{SVG_NS}g") if g.get("class") == "mean"]
    assert float(dot.get("data-mean")) == rows["mean"]["estimate"]
    ticks = [
        float(t.get("x")) for t in mean.iter(f"{SVG_NS}text") if t.get("text-anchor") == "middle"
    ]
    assert ticks == pytest.approx(middles, abs=0.11)  # the mean's axis is the columns'
    assert score["value"] == svg.format_score("mean", rows["mean"]["estimate"])
    drawn = ET.fromstring(str(nps["chart"]))
    (point,) = [g for g in drawn.iter(f"{SVG_NS}g") if g.get("class") == "nps"]
    assert float(point.get("data-estimate")) == rows["nps"]["estimate"]
    assert (float(point.get("data-lower")), float(point.get("data-upper"))) == (
        rows["nps"]["lower"],
        rows["nps"]["upper"],
    )
    ends = [t.text for t in drawn.iter(f"{SVG_NS}text") if t.get("text-anchor") == "middle"]
    assert ends == ["-100", "-50", "0", "+50", "+100"]
    assert "share who answered 9 or 10 minus the share who answered 0 to 6" in nps["about"]


@pytest.mark.parametrize("points", [7, 11])
def test_every_chart_keeps_its_width_and_12_px_text_on_a_phone(points: int) -> None:
    """Reflow, never shrink: each chart is drawn WIDTH units wide and no text is under 11 units,
    so a 344 px card (a 390 px phone) draws it at 12 px or more."""
    result, question = _scale_result(points)
    labels = [row["label"] for row in svg.charted(result)["categories"]]
    words = answer_words(question, labels)
    charts = [svg.chart_for(result, question, words, present.AMONG)]
    charts += [str(s["chart"]) for s in present.scale_scores(question, result, labels, "")]
    assert len(charts) == (3 if points == 11 else 2)
    for chart in charts:
        root = ET.fromstring(chart)
        assert float(root.get("width")) == svg.WIDTH
        sizes = [float(e.get("font-size")) for e in root.iter() if e.get("font-size")]
        assert min(sizes) >= 11
        assert min(sizes) * 344 / svg.WIDTH >= 12


def test_nothing_estimated_among_those_who_answered_is_said_in_words() -> None:
    """All answer shares undefined (nobody estimated to have answered), a declined share
    undefined: the page says so and still shows whom the question applied to."""
    result, question = _scale_result(7)
    rows = [
        {**row, "estimate": None} if row["label"] != "not_applicable" else row
        for row in result["categories"]
    ]
    view = present.question_view(question, {**result, "categories": rows})
    assert not view["chart"] and "nobody answered" in view["unanswered"]
    assert [line["data"]["row"] for line in view["nonresponse"]] == ["not_applicable"]
    assert view["scores"] == [] and view["points"] == []
    declined = {
        "label": "declined",
        "share_of": "applicable",
        "estimate": None,
        "lower": 0.0,
        "upper": 1.0,
    }
    (line,) = present.nonresponse_lines({"categories": [declined]}, {"declined": "No thanks"})
    assert line["text"].startswith("The share of respondents who chose “No thanks”: no estimate")


def test_the_respondents_needed_are_said_to_count_all_respondents() -> None:
    """The published count for ±10 points is for estimates over all respondents (deniable.
    nonresponse); an optional question's shares or mean among those who answered need more."""
    result = {"precision": "imprecise", "respondents_for_ten_points": 2014}
    assert present.precision_sentence(result, asked_some=False).endswith(
        "About 2,014 respondents are needed for ±10 points."
    )
    assert present.precision_sentence(result, asked_some=True).endswith(
        "needed for ±10 points over all respondents; shares among those who answered need more."
    )
    assert present.precision_sentence({**result, "mean": 3.0}, asked_some=True).endswith(
        "over all respondents; the mean among those who answered needs more."
    )
