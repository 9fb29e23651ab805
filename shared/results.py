"""A question's published result: its estimates and every interval family.

The aggregator's side of a question.  The device builds the same
:class:`deniable.survey.Question` to randomize, but never estimates; estimation
needs numpy, so it lives here, beside :mod:`deniable.estimation`, and takes the
question and its additive sufficient statistics (``Question.statistics``,
summed over batches).

One interval is published as *the* interval: ``lower``/``upper`` (and
``simultaneous_lower``/``simultaneous_upper``) are the tightest published family's,
named by ``tightest`` (``simultaneous_tightest``), so the JSON, the CSV, the command
line, the dashboard and pandas show the same numbers.  Every family keeps its own
columns beside them: ``chebyshev_lower`` ... ``exact_tail_simultaneous_upper``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .estimation import DEFAULT_BETA, estimate_frequencies, estimate_mean
from .nonresponse import nonresponse_results

if TYPE_CHECKING:
    import numpy as np

    from .survey import Question

__all__ = ["PUBLISHED_COLUMNS", "mean_row", "question_results"]

# The published interval's columns, in the order every tabular view shows them (the CSV,
# pandas): the estimate, the interval, and the family it is.
PUBLISHED_COLUMNS = (
    "label",
    "estimate",
    "lower",
    "upper",
    "tightest",
    "simultaneous_lower",
    "simultaneous_upper",
    "simultaneous_tightest",
    # "answered", "applicable" or "all": whom a share counts (optional and conditional
    # questions, deniable.nonresponse); empty for the other questions' rows.
    "share_of",
)
# Every interval family's own columns start with its name (``chebyshev_exact_`` with
# ``chebyshev_``); see :func:`_primary`.
_FAMILY_PREFIXES = ("chebyshev_", "bernstein_", "exact_tail_")


def question_results(
    question: Question, statistics: np.ndarray, n: int, *, beta: float | None = None
) -> dict[str, Any]:
    """The published result for ``question`` from ``n`` reports' summed ``statistics``.

    A numeric question gets its mean (:func:`deniable.estimation.estimate_mean`); a choice
    question its frequencies, one per category with the mechanism's own estimator; a
    multiple-choice question estimates every option on its own (each is a yes/no share, so
    the shares are not normalized to sum to one).  An optional or conditional question
    publishes the shares among those who answered, who declined and whom it did not apply to,
    and a scale its mean point and net promoter score (:mod:`deniable.nonresponse`).
    """
    if beta is None:
        beta = DEFAULT_BETA
    summary: dict[str, Any] = {
        "question": question.id,
        "type": question.type,
        "mechanism": question.mechanism,
        "epsilon": question.epsilon,
        "n": n,
    }
    if n == 0:
        return {**summary, "beta": beta, "estimate": None}
    oracle = question.oracle
    if question.extras or question.type == "scale":
        return {**summary, **nonresponse_results(question, statistics, n, beta)}
    if oracle.kind == "numeric":
        mean = estimate_mean(oracle, statistics, n, beta=beta).to_dict()
        return {**summary, **_primary(mean, mean["tightest"], None)}
    if oracle.kind == "multiple":
        result = estimate_frequencies(
            oracle.per_category,
            statistics,
            n,
            beta=beta,
            categories=len(question.options),
            normalize=False,
        )
    else:
        result = estimate_frequencies(oracle, statistics, n, beta=beta)
    published = result.to_dict(question.labels)
    family, simultaneous = published["tightest"], published["simultaneous_tightest"]
    published["categories"] = [
        _primary(category, family, simultaneous) for category in published["categories"]
    ]
    return {**summary, **published}


def mean_row(result: dict[str, Any]) -> dict[str, Any]:
    """A numeric question's result as one table row: ``label`` "mean", its estimate, the
    published interval and every family's own bounds."""
    return {
        "label": "mean",
        "estimate": result["mean"],
        "lower": result["lower"],
        "upper": result["upper"],
        **{key: value for key, value in result.items() if key.startswith(_FAMILY_PREFIXES)},
    }


def _primary(item: dict[str, Any], family: str, simultaneous: str | None) -> dict[str, Any]:
    """``item`` (a category, or a mean) with ``lower``/``upper`` the ``family``'s bounds.

    The estimators' own ``lower``/``upper`` are Chebyshev's; they move to ``chebyshev_*``.
    """
    ends = ("lower", "upper") + (
        ("simultaneous_lower", "simultaneous_upper") if simultaneous is not None else ()
    )
    chebyshev = {f"chebyshev_{end}": item[end] for end in ends}
    published: dict[str, Any] = {}
    for key, value in item.items():
        published[key] = value
        if key == ends[-1]:
            published.update(chebyshev)  # the families' columns follow the primary ones
    for end in ends:
        chosen = family if not end.startswith("simultaneous_") else str(simultaneous)
        published[end] = published.get(f"{chosen}_{end}", item[end])
    return published
