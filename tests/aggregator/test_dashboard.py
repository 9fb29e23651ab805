"""The dashboard: SVG rendering (pure), the pages against the API, and a real browser."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from deniable.aggregator.dashboard import svg
from deniable.survey import Survey

SVG_NS = "{http://www.w3.org/2000/svg}"
HOSTILE = "<script>alert('x')</script> & \"quoted\""


def _survey(label: str = "Red") -> Survey:
    return Survey.from_dict(
        {
            "format": "deniable.survey/1",
            "id": "unit",
            "title": "Unit",
            "questions": [
                {"id": "colour", "type": "single_choice", "text": "Colour?", "epsilon": 2.0,
                 "options": [label, "Green", "Blue"], "mechanism": "grr"},
                {"id": "hours", "type": "numeric", "text": "Hours?", "epsilon": 1.0,
                 "lo": 0, "hi": 40},
                {"id": "ok", "type": "yes_no", "text": "OK?", "epsilon": 1.0},
            ],
        }
    )  # fmt: skip


def _result(question, values, seed: int = 7) -> dict:
    rng = np.random.default_rng(seed)
    batch = question.oracle.randomize_many(np.asarray(values), rng)
    return question.results(question.oracle.statistics(batch), len(values))


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
        assert float(bar.get("data-lower")) == category["lower"]
        assert float(bar.get("data-upper")) == category["upper"]
        whisker = bar.find(f"{SVG_NS}g")
        assert whisker.get("class") == "whisker"
        x1 = float(whisker.find(f"{SVG_NS}line").get("x1"))
        x2 = float(whisker.find(f"{SVG_NS}line").get("x2"))
        assert x1 <= x2


def test_bar_lengths_follow_estimates_and_negative_estimates_go_left() -> None:
    result = {
        "question": "q", "type": "single_choice", "beta": 0.05, "n": 100,
        "categories": [
            {"label": "a", "estimate": 0.8, "lower": 0.6, "upper": 1.0},
            {"label": "b", "estimate": 0.4, "lower": 0.2, "upper": 0.6},
            {"label": "c", "estimate": -0.1, "lower": 0.0, "upper": 0.1},
        ],
    }  # fmt: skip
    root = _parse(svg.bar_chart(result))
    rects = [g.find(f"{SVG_NS}rect") for g in root.iter(f"{SVG_NS}g") if g.get("class") == "bar"]
    widths = [float(r.get("width")) for r in rects]
    assert widths[0] == pytest.approx(2 * widths[1], rel=0.01)
    assert widths[2] == pytest.approx(widths[1] / 4, rel=0.02)
    assert float(rects[2].get("x")) < float(rects[1].get("x"))  # drawn left of zero
    assert rects[2].get("fill") == svg.NEGATIVE_FILL
    ticks = [t.text for t in root.iter(f"{SVG_NS}text") if t.get("font-size") == "11"][1:]
    assert "0%" in ticks and min(float(t.rstrip("%")) for t in ticks) <= -10  # axis stretched
    assert "-10.0%" in "".join(t.text or "" for t in root.iter(f"{SVG_NS}tspan"))


def test_mean_chart_places_the_mean_and_its_interval_on_the_answer_range() -> None:
    question = _survey().question("hours")
    result = _result(question, np.full(2000, 30.0))
    text = svg.mean_chart(result, 0, 40, title="Hours <per> week")
    root = _parse(text)
    (group,) = [g for g in root.iter(f"{SVG_NS}g") if g.get("class") == "mean"]
    assert float(group.get("data-mean")) == result["mean"]
    assert float(group.get("data-lower")) == result["lower"]
    assert float(group.get("data-upper")) == result["upper"]
    dot = group.find(f"{SVG_NS}circle")
    line = group.find(f"{SVG_NS}g").find(f"{SVG_NS}line")
    assert float(line.get("x1")) <= float(dot.get("cx")) <= float(line.get("x2"))
    assert "Hours &lt;per&gt; week" in text


def test_chart_for_dispatches_and_draws_nothing_without_reports() -> None:
    survey = _survey()
    empty = survey.question("ok").results(np.zeros(2, dtype=np.int64), 0)
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
