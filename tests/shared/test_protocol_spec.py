"""Points of docs/protocol.md an implementer had to guess, pinned in Python.

The cross-language vectors carry the same cases for the JavaScript client.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from deniable.errors import InvalidSurvey
from deniable.estimation import chebyshev_half_width
from deniable.mechanisms.discrete_laplace import DiscreteLaplace
from deniable.mechanisms.duchi import Duchi
from deniable.randomness import RESOLUTION
from deniable.survey import FORMAT, Survey

from .generate_vectors import StreamSource
from .test_vectors import VECTORS


def test_duchi_scales_a_value_without_overflow_on_the_widest_ranges() -> None:
    # hi - lo = 1e308 is finite, but 2 * (x - lo) is not for x - lo above 9e307.
    oracle = Duchi(epsilon=1.0, lo=-5e307, hi=5e307)
    t = 2 * ((4e307 + 5e307) / 1e308) - 1
    assert math.isclose(t, 0.8)
    expected = min(
        oracle._high, max(oracle._low, math.floor((0.5 + t * oracle._slope) * RESOLUTION))
    )
    assert oracle._threshold(4e307) == expected
    assert oracle._threshold(5e307) == oracle._high
    assert oracle._threshold(-5e307) == oracle._low


def _exact_report_variance(oracle: DiscreteLaplace, value: float) -> float:
    """Var[z] for one report of ``value``, from the mechanism's exact report distribution."""
    distribution = oracle.report_distribution(value)
    z = np.array([int.from_bytes(bytes.fromhex(k), "big", signed=True) for k in distribution])
    p = np.array(list(distribution.values()))
    mean = float(p @ z) / float(p.sum())
    return float(p @ (z - mean) ** 2) / float(p.sum())


@pytest.mark.parametrize(("grid_size", "epsilon"), [(20, 1.0), (4, 0.5), (200, 2.0)])
def test_discrete_laplace_variance_bound_is_the_worst_respondent_exactly(grid_size, epsilon):
    # Finite population (docs/design.md, Intervals): each respondent's report varies only through
    # the rounding, r(1 - r) <= 1/4 grid units², and the noise; the bound is attained at r = 1/2.
    oracle = DiscreteLaplace(epsilon=epsilon, lo=0.0, hi=float(grid_size), grid_size=grid_size)
    bound = oracle.variance_bound(1)  # in value units; one grid unit is one value unit here
    worst = _exact_report_variance(oracle, 2.5)
    assert worst <= bound * (1 + 1e-9)
    assert worst == pytest.approx(bound, rel=1e-9)
    for value in (0.0, 1.0, 2.25, 3.9, float(grid_size)):
        assert _exact_report_variance(oracle, value) <= bound * (1 + 1e-9)


def test_discrete_laplace_chebyshev_interval_covers_at_the_worst_case() -> None:
    # Every respondent at a half-step (rounding variance 1/4, the worst case): the published
    # Chebyshev interval (β = 0.05) must cover in at least 95% of 4000 seeded collections.
    # It is 4.47 standard deviations wide and the mean of 50 reports is close to normal, so
    # the true coverage is above 0.9999: below 0.95 in 4000 runs has probability < 1e-100.
    oracle = DiscreteLaplace(epsilon=1.0, lo=0.0, hi=20.0, grid_size=20)
    n, runs, beta = 50, 4000, 0.05
    rng = np.random.default_rng(19)
    values = np.full(n, 7.5)
    half = chebyshev_half_width(oracle.variance_bound(n), beta)
    reports = oracle.randomize_many(np.tile(values, runs), rng).reshape(runs, n)
    means = oracle.lo + (oracle.hi - oracle.lo) * reports.mean(axis=1) / oracle.grid_size
    covered = np.mean(np.abs(means - 7.5) <= half)
    assert covered >= 1 - beta
    # and the old bound, with (G/2)² per report, was about 6 % wider here
    old = math.sqrt(((20 * 20 / 4 + oracle.noise_variance) / n) / beta)
    assert half < old / 1.05


def _demo(edit) -> dict:
    definition = json.loads(json.dumps(VECTORS["surveys"][0]["definition"]))
    edit(definition)
    return definition


def test_signed_thresholds_within_the_declared_epsilon_are_used_as_signed() -> None:
    # One rule for both clients and the aggregator (docs/protocol.md §2.3): a threshold below
    # the derived one is accepted (it implies less ε) and randomizes and estimates as signed.
    keep = 2**52 + 2**50  # p = 0.625 < e/(1 + e): implied ε = ln(5/3) < 1
    survey = Survey.from_dict(
        _demo(lambda d: d["questions"][0]["parameters"].update(keep=keep)), resolved=True
    )
    oracle = survey.questions[0].oracle
    assert oracle.p_star == 0.625 and survey.questions[0].probabilities == {"keep": keep}
    assert survey.to_dict()["questions"][0]["parameters"]["keep"] == keep
    # a byte stream whose draw lies between the signed and the derived threshold: kept no more
    draw = keep + 1000
    source = StreamSource((draw << 3).to_bytes(7, "little"))
    assert survey.questions[0].randomize(True, rng=source) == "00"
    # Duchi's slope is accuracy only: any in (0, 0.5] with symmetric clamps, and the estimator
    # follows it (report magnitude 1/(2 slope)).
    wide = Survey.from_dict(
        _demo(lambda d: d["questions"][3]["parameters"].update(slope=0.125)), resolved=True
    )
    oracle = wide.questions[3].oracle
    assert oracle.bound == 4.0
    for value in (oracle.lo, 7.5, oracle.hi):  # E[B · sign] = t: the estimator stays unbiased
        t = 2 * ((value - oracle.lo) / (oracle.hi - oracle.lo)) - 1
        plus = oracle.report_distribution(value)["01"]
        assert oracle.bound * (2 * plus - 1) == pytest.approx(t, abs=1e-12)


def test_a_longitudinal_question_with_other_thresholds_is_another_memo_family() -> None:
    from deniable.client.memo import family_tag

    habit = VECTORS["questions"]["habit"]
    survey = {"format": FORMAT, "id": "s", "title": "T", "questions": [habit]}
    derived = Survey.from_dict(survey, resolved=True).questions[0]
    other = json.loads(json.dumps(survey))
    other["questions"][0]["parameters"]["keep"] -= 1
    signed = Survey.from_dict(other, resolved=True).questions[0]
    secret = bytes(32)
    assert family_tag(secret, derived) != family_tag(secret, signed)
    assert family_tag(secret, derived) == family_tag(
        secret, Survey.from_dict(json.loads(json.dumps(survey)), resolved=True).questions[0]
    )


def test_an_unpaired_surrogate_is_refused_as_javascript_refuses_it() -> None:
    # Not in the vector file (UTF-8 cannot hold it); client/browser/test/vectors.test.js has
    # the JavaScript twin.  JSON text can escape one: json.loads('"\\ud800"') == "\ud800".
    definition = _demo(lambda d: d["questions"][1]["options"].__setitem__(0, "Car\ud800"))
    with pytest.raises(InvalidSurvey) as refused:
        Survey.from_dict(definition, resolved=True)
    assert refused.value.reason == "wrong-type"


def test_the_top_level_table_of_a_definition_lists_every_field_the_code_takes() -> None:
    """docs/protocol.md §2.2: the table of top-level fields is the list a definition may
    carry (unknown fields are errors), ``relay`` included."""
    import re
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "protocol.md").read_text()
    section = text[text.index("### 2.2") : text.index("Question:", text.index("### 2.2"))]
    listed = set(re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE))
    assert listed == Survey.FIELDS
