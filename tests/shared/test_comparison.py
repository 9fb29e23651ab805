"""deniable.comparison for questions with non-response and scales: coverage of the change.

Two waves of one questionnaire (optional, conditional, scale and optional-number
questions), the second with other true answers; each published difference (shares among
those who answered, the declined and not-applicable shares, a scale's mean and NPS, a
number's mean among those who answered) must cover the true change.  Seeded simulation;
each threshold has a false-alarm rate <= 1e-6 under the claim it tests (binomial tails,
split over every interval checked by the union bound).  The exact-tail family (its own
coverage is tested in test_exact_tail.py) is switched off in the simulation to keep it
fast; every other family is chosen as published.
"""

from __future__ import annotations

import numpy as np
import pytest

from deniable import exact_tail
from deniable.comparison import compare_question, interval_sentence
from deniable.errors import InvalidParameter
from deniable.survey import Survey

from .test_crosstab import allowed_failures
from .test_crosstab_nonresponse import QUESTIONNAIRE, batch, questionnaire_answers


def true_rows(question, values: list) -> dict[str, float]:
    """What the published rows estimate, from one wave's true answers (deniable.nonresponse)."""
    extras = question.extras
    if question.type == "numeric":
        status = np.array([s for s, _ in values])
        numbers = np.array([0.0 if x is None else x for _, x in values])
        shares = np.eye(1 + len(extras))[status].mean(axis=0)
        rows = {"mean": float(numbers[status == 0].mean())}
        base = 1
    else:
        if question.type == "multiple_choice":
            indicators = np.array(values, dtype=float)
        else:
            indicators = np.eye(question.domain_size)[np.array(values)]
        shares = indicators.mean(axis=0)
        base = question.base_size
        answered = 1 - shares[base:].sum()
        rows = {label: shares[i] / answered for i, label in enumerate(question.base_labels)}
        if question.type == "scale":
            points = np.array([float(label) for label in question.base_labels])
            rows = {"mean": float(points @ shares[:base] / answered)}
            if base == 11:
                nps = shares[9] + shares[10] - shares[:7].sum()
                rows["nps"] = 100 * nps / answered
            rows.update(
                {label: shares[i] / answered for i, label in enumerate(question.base_labels)}
            )
    where = {label: base + i for i, label in enumerate(extras)}
    if "not_applicable" in where:
        rows["not_applicable"] = shares[where["not_applicable"]]
    if "declined" in where:
        asked = 1 - (shares[where["not_applicable"]] if "not_applicable" in where else 0.0)
        rows["declined"] = shares[where["declined"]] / asked
    return rows


def test_differences_of_answered_shares_cover(monkeypatch) -> None:
    monkeypatch.setattr(exact_tail, "available", lambda *args: False)
    survey = Survey.from_dict(QUESTIONNAIRE)
    n, trials, beta = 2000, 100, 0.2
    rng = np.random.default_rng(12)
    waves = [questionnaire_answers(survey, n, rng, later=later) for later in (False, True)]
    truth = {
        q.id: {
            label: value - true_rows(q, waves[0][q.id])[label]
            for label, value in true_rows(q, waves[1][q.id]).items()
        }
        for q in survey.questions
    }
    misses = {q: dict.fromkeys(rows, 0) for q, rows in truth.items()}
    together = dict.fromkeys(truth, 0)
    for _ in range(trials):
        for question in survey.questions:
            sides = []
            for wave in waves:
                reports = batch(question, wave[question.id], rng)
                sides += [question, question.oracle.statistics(reports), n]
            document = compare_question(*sides, beta=beta)
            assert document["method"] == "union"
            rows = {row["label"]: row for row in document["comparisons"]}
            assert set(rows) == set(truth[question.id]), question.id
            outside = False
            for label, change in truth[question.id].items():
                row = rows[label]
                assert row["lower"] <= row["upper"]
                misses[question.id][label] += not row["lower"] <= change <= row["upper"]
                outside |= not row["simultaneous_lower"] <= change <= row["simultaneous_upper"]
            together[question.id] += outside
            # Informative, so that a miss could happen: the smokers' share changes by about
            # -15 points and its interval is narrower than 30 points.
            if question.id == "smoke":
                assert rows["yes"]["upper"] - rows["yes"]["lower"] < 0.3
            if question.id == "rate":
                assert rows["mean"]["upper"] - rows["mean"]["lower"] < 2
    tests = sum(len(rows) for rows in truth.values()) + len(truth)
    limit = allowed_failures(trials, beta, tests)
    for question, counts in misses.items():
        assert max(counts.values()) <= limit, (question, counts)
        assert together[question] <= limit, (question, together[question])


def test_answered_comparison_words_and_refusals() -> None:
    survey = Survey.from_dict(QUESTIONNAIRE)
    rng = np.random.default_rng(2)
    waves = [questionnaire_answers(survey, 3000, rng, later=later) for later in (False, True)]
    smoke = survey.question("smoke")
    sides = []
    for wave in waves:
        sides += [smoke, smoke.oracle.statistics(batch(smoke, wave["smoke"], rng)), 3000]
    rows = {r["label"]: r for r in compare_question(*sides)["comparisons"]}
    assert rows["yes"]["share_of"] == "answered" and rows["declined"]["share_of"] == "applicable"
    assert rows["yes"]["sentence"].startswith("changed by -")
    assert rows["yes"]["significant"] is True
    assert interval_sentence(0.061, 0.01, 0.12) == "changed by +6 points (from +1 to +12)"
    assert interval_sentence(-0.001, -0.05, 0.04).endswith(
        "(from -5 to +4), not distinguishable from no change"
    )
    assert interval_sentence(3.456, 3.0, 4.0, unit="", scale=1.0, digits=2) == (
        "changed by +3.46 (from +3.00 to +4.00)"
    )
    # No reports yet in one wave: nothing to compare; different questions are refused.
    assert compare_question(smoke, sides[1], 3000, smoke, sides[1] * 0, 0)["comparisons"] is None
    with pytest.raises(InvalidParameter, match="differ in type or options"):
        compare_question(smoke, sides[1], 10, survey.question("fav"), sides[1], 10)


def test_relay_dummies_are_taken_out_of_both_waves(monkeypatch) -> None:
    """With the relay's dummies in both waves (the law calibrated for central ε = 1, δ = 1e-6,
    two noised batches each), each difference is taken between the waves' noised published
    rows, and it still covers the true change (the same false-alarm budget).  Without the
    noise the estimates would be biased by the dummies (checked: an unnoised reading misses)."""
    from deniable import noised
    from deniable.dummies import calibrate
    from deniable.noised import DummyNoise
    from deniable.nonresponse import nonresponse_results

    monkeypatch.setattr(exact_tail, "available", lambda *args: False)
    survey = Survey.from_dict(QUESTIONNAIRE)
    noise = DummyNoise(law=calibrate(1.0, 1e-6).law, batches=2)
    n, trials, beta = 2000, 40, 0.2
    declined = {"noised": [], "plain": []}
    rng = np.random.default_rng(29)
    waves = [questionnaire_answers(survey, n, rng, later=later) for later in (False, True)]
    smoke = survey.question("smoke")
    outputs = noised.output_statistics(smoke.oracle)
    truth = {
        label: value - true_rows(smoke, waves[0]["smoke"])[label]
        for label, value in true_rows(smoke, waves[1]["smoke"]).items()
    }
    misses = dict.fromkeys(truth, 0)
    for _ in range(trials):
        sides, statistics = [], []
        for wave in waves:
            counts = smoke.oracle.statistics(batch(smoke, wave["smoke"], rng))
            for _ in range(noise.batches):  # D_y per output value and batch
                counts = counts + np.asarray(noise.law.sample_values(len(outputs), rng)) @ outputs
            statistics.append(counts)
            sides += [smoke, counts, n]
        document = compare_question(*sides, beta=beta, noises=(noise, noise))
        rows = {row["label"]: row for row in document["comparisons"]}
        published = [
            {r["label"]: r for r in nonresponse_results(smoke, s, n, beta / 2, noise)["categories"]}
            for s in statistics
        ]
        for label, change in truth.items():
            row = rows[label]
            assert row["first"] == published[0][label]["estimate"]
            assert row["second"] == published[1][label]["estimate"]
            misses[label] += not row["lower"] <= change <= row["upper"]
        # The first wave's declined share, read with and without the dummies taken out.
        plain = nonresponse_results(smoke, statistics[0], n, beta / 2)["categories"]
        declined["plain"].append({r["label"]: r for r in plain}["declined"]["estimate"])
        declined["noised"].append(published[0]["declined"]["estimate"])
    limit = allowed_failures(trials, beta, len(truth))
    assert max(misses.values()) <= limit, misses
    # The dummies read as answers bias the level: 54 dummies per output value among 2,000
    # reports move the declined share by about 3 points, dozens of standard errors of the average
    # over the trials; taken out, the average is within 1 point.
    expected = true_rows(smoke, waves[0]["smoke"])["declined"]
    assert abs(np.mean(declined["noised"]) - expected) < 0.01
    assert np.mean(declined["plain"]) - expected > 0.015
