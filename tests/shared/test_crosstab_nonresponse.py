"""Crosstabs of questions that may go unanswered: exactness and coverage of the ratios.

Shares among those who answered both questions, a scale's mean by group and an optional
number's mean by group (``deniable.crosstab_joint``, ``deniable.crosstab_means``): exact on
the expected statistics of every mechanism's report law, and covering in a seeded
simulation whose thresholds have a false-alarm rate <= 1e-6 (binomial tails, union bound
over every interval checked).
"""

from __future__ import annotations

import numpy as np
import pytest

from deniable.crosstab import (
    CrosstabStatistics,
    axis,
    crosstab_statistics,
    estimate_answered,
    question_crosstab,
    scale_means,
    status_means,
)
from deniable.errors import InvalidParameter
from deniable.mechanisms import OptionwiseRR
from deniable.survey import Survey

from .test_crosstab import allowed_failures

# -- non-response: shares among those who answered, scales and optional numbers by group -------

QUESTIONNAIRE = {
    "format": "deniable.survey/2",
    "id": "nonresponse",
    "title": "Non-response",
    "questions": [
        {"id": "smoke", "type": "yes_no", "text": "Smoke?", "epsilon": 5, "optional": True},
        {
            "id": "much",
            "type": "numeric",
            "text": "How many?",
            "epsilon": 5,
            "lo": 0,
            "hi": 40,
            "optional": True,
            "show_if": {"question": "smoke", "equals": True},
        },
        {
            "id": "nps",
            "type": "scale",
            "points": 5,
            "text": "Recommend?",
            "epsilon": 5,
            "optional": True,
            "mechanism": "grr",
        },
        {
            "id": "why",
            "type": "multiple_choice",
            "options": ["a", "b", "c"],
            "text": "Why?",
            "epsilon": 5,
            "optional": True,
        },
        {
            "id": "fav",
            "type": "single_choice",
            "options": ["x", "y", "z"],
            "text": "Favourite?",
            "epsilon": 5,
            "show_if": {"question": "smoke", "equals": False},
            "mechanism": "oue",
        },
        {
            "id": "rate",
            "type": "scale",
            "points": 11,
            "text": "How likely?",
            "epsilon": 5,
            "mechanism": "grr",
        },
    ],
}


def questionnaire_answers(
    survey, n: int, rng: np.random.Generator, later: bool = False
) -> dict[str, list]:
    """n respondents' true answers along their paths, in mechanism terms (some decline);
    ``later``: a second wave, with fewer smokers who smoke less and rate higher."""
    columns: dict[str, list] = {q.id: [] for q in survey.questions}
    smokers = [0.2, 0.6, 0.2] if later else [0.35, 0.5, 0.15]
    for _ in range(n):
        smoke = rng.choice([True, False, None], p=smokers)
        answers = {"smoke": None if smoke is None else bool(smoke)}
        if smoke is True and rng.random() < 0.85:
            answers["much"] = float(np.clip(rng.normal(6 if later else 12, 6), 0, 40))
        if rng.random() < 0.8:
            answers["nps"] = int(rng.choice(5, p=[0.1, 0.1, 0.2, 0.3, 0.3])) + 1
        if rng.random() < 0.9:
            answers["why"] = [o for o in "abc" if rng.random() < 0.4]
        if smoke is False:
            answers["fav"] = str(rng.choice(["x", "y", "z"], p=[0.2, 0.3, 0.5]))
        answers["rate"] = int(min(10, rng.binomial(10, 0.8 if later else 0.6)))
        for question, value in survey.path_answers(answers).items():
            columns[question].append(value)
    return columns


def indicators(question, values: list) -> np.ndarray:
    """(n, categories) true indicators of each value of the question's whole domain."""
    if question.type == "multiple_choice":
        return np.array(values, dtype=np.int64)
    return np.eye(question.domain_size, dtype=np.int64)[np.array(values)]


def batch(question, values: list, rng: np.random.Generator) -> np.ndarray:
    if question.type == "numeric":
        rows = [(status, 0.0 if number is None else number) for status, number in values]
        return question.oracle.randomize_many(np.array(rows, float), rng)
    return question.oracle.randomize_many(np.array(values), rng)


def expected_scores(question, value) -> np.ndarray:
    """E[scores] of one respondent's report, from the mechanism's exact report law."""
    oracle, ax = question.oracle, axis(question.oracle)
    if isinstance(oracle, OptionwiseRR):  # one binary RR per option, independent
        bit = oracle.option_oracle
        laws = [bit.report_distribution(b) for b in value]
        return np.array(
            [sum(p * int(bit.decode_many([y])[0]) for y, p in law.items()) for law in laws]
        )
    if question.type == "numeric":
        law = {k: float(v) for k, v in oracle.exact_distribution(value).items()}
    else:
        law = oracle.report_distribution(tuple(value) if np.ndim(value) else value)
    outputs = list(law)
    scores = ax.scores(oracle.decode_many(outputs)).astype(float)
    return np.array([law[y] for y in outputs]) @ scores


def true_figures(survey, columns: dict[str, list]) -> dict[str, np.ndarray]:
    """The estimands the new estimators target, from the true answers."""
    smoke, fav = survey.question("smoke"), survey.question("fav")
    s, f = indicators(smoke, columns["smoke"]), indicators(fav, columns["fav"])
    both = (s[:, :2].sum(1) == 1) & (f[:, :3].sum(1) == 1)
    joint = s[both][:, :2].T @ f[both][:, :3] / both.sum()
    nps = np.array([v if v < 5 else -1 for v in columns["nps"]])  # index, -1 declined
    points = nps + 1.0
    by_smoke = np.array([points[(nps >= 0) & (s[:, k] == 1)].mean() for k in range(3)])
    why = np.array(columns["why"])
    by_why = np.array([points[(nps >= 0) & (why[:, k] == 1)].mean() for k in range(4)])
    much = np.array([number if status == 0 else np.nan for status, number in columns["much"]])
    by_smoke_much = np.array(
        [
            np.nanmean(much[s[:, k] == 1]) if np.any(~np.isnan(much[s[:, k] == 1])) else np.nan
            for k in range(3)
        ]
    )
    return {"joint": joint, "by_smoke": by_smoke, "by_why": by_why, "much": by_smoke_much}


def new_estimates(survey, batches: dict[str, np.ndarray], beta: float) -> dict[str, object]:
    q = survey.question
    axes = {name: axis(q(name).oracle) for name in batches}

    def statistics(first: str, second: str) -> CrosstabStatistics:
        return crosstab_statistics(axes[first], axes[second], batches[first], batches[second])

    return {
        "joint": estimate_answered(
            axes["smoke"],
            axes["fav"],
            statistics("smoke", "fav"),
            row_extras=1,
            column_extras=1,
            beta=beta,
        ),
        "by_smoke": scale_means(
            axes["smoke"],
            axes["nps"],
            statistics("smoke", "nps"),
            points=range(1, 6),
            extras=1,
            beta=beta,
        ),
        "by_why": scale_means(
            axes["why"],
            axes["nps"],
            statistics("why", "nps"),
            points=range(1, 6),
            extras=1,
            beta=beta,
        ),
        "much": status_means(axes["smoke"], axes["much"], statistics("smoke", "much"), beta=beta),
    }


def test_ratio_estimators_are_exact_on_expected_statistics() -> None:
    """E[statistics] from the exact report laws: the ratios' numerators and denominators are
    linear in them, so every estimate equals its true value exactly (up to rounding)."""
    survey = Survey.from_dict(QUESTIONNAIRE)
    rng = np.random.default_rng(8)
    columns = questionnaire_answers(survey, 120, rng)
    truth = true_figures(survey, columns)
    expected = {}
    for name in ("smoke", "fav", "nps", "why", "much"):
        question = survey.question(name)
        cache: dict = {}
        rows = []
        for value in columns[name]:
            key = repr(value)
            if key not in cache:
                cache[key] = expected_scores(question, value)
            rows.append(cache[key])
        expected[name] = np.array(rows)

    def statistics(first: str, second: str) -> CrosstabStatistics:
        za, zb = expected[first], expected[second]
        return CrosstabStatistics(n=len(za), rows=za.sum(0), columns=zb.sum(0), joint=za.T @ zb)

    q = survey.question
    answered = estimate_answered(
        axis(q("smoke").oracle),
        axis(q("fav").oracle),
        statistics("smoke", "fav"),
        row_extras=1,
        column_extras=1,
    )
    assert np.allclose(answered.estimates, truth["joint"], atol=1e-9)
    smoke_axis, nps_axis = axis(q("smoke").oracle), axis(q("nps").oracle)
    means = scale_means(
        smoke_axis, nps_axis, statistics("smoke", "nps"), points=range(1, 6), extras=1
    )
    assert np.allclose(means.mean, np.clip(truth["by_smoke"], 1, 5), atol=1e-9)
    much = status_means(smoke_axis, axis(q("much").oracle), statistics("smoke", "much"))
    known = ~np.isnan(truth["much"])
    assert known.sum() == 1 and np.allclose(much.mean[known], truth["much"][known], atol=1e-9)


def test_ratio_intervals_cover_per_cell_and_simultaneously() -> None:
    """Seeded simulation: each published interval's misses stay within the binomial bound at
    false alarm 1e-6 (union bound over every interval checked)."""
    survey = Survey.from_dict(QUESTIONNAIRE)
    n, trials, beta = 3000, 150, 0.2
    rng = np.random.default_rng(31)
    columns = questionnaire_answers(survey, n, rng)
    truth = true_figures(survey, columns)
    misses = {name: np.zeros(np.shape(value), int) for name, value in truth.items()}
    together = dict.fromkeys(truth, 0)
    for _ in range(trials):
        batches = {name: batch(survey.question(name), columns[name], rng) for name in columns}
        found = new_estimates(survey, batches, beta)
        for name, estimate in found.items():
            known = ~np.isnan(truth[name])
            value = np.where(known, truth[name], 0.0)
            lower = np.where(known, estimate.lower, -np.inf)
            upper = np.where(known, estimate.upper, np.inf)
            misses[name] += (value < lower - 1e-12) | (value > upper + 1e-12)
            outside = (value < np.where(known, estimate.simultaneous_lower, -np.inf) - 1e-12) | (
                value > np.where(known, estimate.simultaneous_upper, np.inf) + 1e-12
            )
            together[name] += bool(np.any(outside))
            assert np.all(estimate.simultaneous_lower <= estimate.lower + 1e-12)
        # Informative, so that a miss could happen: the answered cells, the non-smokers' mean
        # point (half its range) and the smokers' mean number (three quarters).
        assert np.all(found["joint"].upper[0] - found["joint"].lower[0] < 0.5)
        assert found["by_smoke"].upper[0] - found["by_smoke"].lower[0] < 2
        assert found["much"].upper[1] - found["much"].lower[1] < 30
    tests = sum(np.size(value) for value in truth.values()) + len(truth)
    limit = allowed_failures(trials, beta, tests)
    for name in truth:
        assert misses[name].max() <= limit, (name, misses[name])
        assert together[name] <= limit, (name, together[name])


def test_question_crosstab_shows_or_hides_non_response() -> None:
    survey = Survey.from_dict(QUESTIONNAIRE)
    rng = np.random.default_rng(3)
    columns = questionnaire_answers(survey, 300, rng)
    batches = {name: batch(survey.question(name), columns[name], rng) for name in columns}
    q = survey.question

    def document(rows: str, cols: str, nonresponse: str) -> dict:
        statistics = crosstab_statistics(
            axis(q(rows).oracle), axis(q(cols).oracle), batches[rows], batches[cols]
        )
        return question_crosstab(q(rows), q(cols), statistics, nonresponse=nonresponse)

    shown = document("smoke", "fav", "show")
    assert shown["kind"] == "joint" and shown["share_of"] == "all"
    assert shown["rows"]["labels"] == ["no", "yes", "declined"]
    assert shown["columns"]["labels"] == ["x", "y", "z", "not_applicable"]
    assert len(shown["cells"]) == 12
    hidden = document("smoke", "fav", "hide")
    assert hidden["share_of"] == "answered" and hidden["tightest"] == "ratio"
    assert hidden["rows"]["labels"] == ["no", "yes"] and len(hidden["cells"]) == 6
    assert hidden["rows"]["extras"] == ["declined"]
    assert 0 <= hidden["answered"]["lower"] <= hidden["answered"]["upper"] <= 1
    for cell in hidden["cells"]:
        assert 0 <= cell["simultaneous_lower"] <= cell["lower"] <= cell["upper"] <= 1
    # A scale is a mean by group; hiding drops the by-question's non-response groups.
    means = document("nps", "smoke", "show")
    assert (means["kind"], means["by"], means["of"], means["among"]) == (
        "means",
        "smoke",
        "nps",
        "answered",
    )
    assert [c["label"] for c in means["categories"]] == ["no", "yes", "declined"]
    assert [c["label"] for c in document("nps", "smoke", "hide")["categories"]] == ["no", "yes"]
    assert all(1 <= c["lower"] <= c["upper"] <= 5 for c in means["categories"])
    # An optional number by a scale's points: its mean among those who answered it.
    number = document("nps", "much", "show")
    assert number["of"] == "much" and "answered" in number["categories"][0]
    assert [c["label"] for c in number["categories"]][-1] == "declined"
    with pytest.raises(InvalidParameter, match="show or hide"):
        document("smoke", "fav", "maybe")
    # Planning: a scale's crosstab is a mean by group, not cells; said in words.
    from deniable.crosstab_plan import plan_crosstab

    with pytest.raises(InvalidParameter, match="mean for each answer"):
        plan_crosstab(("scale", 11, 1.0), ("yes_no", None, 1.0), n=100)
