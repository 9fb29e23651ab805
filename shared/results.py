"""A question's published result: its estimates and every interval family.

The aggregator's side of a question.  The device builds the same
:class:`deniable.survey.Question` to randomize, but never estimates; estimation
needs numpy, so it lives here, beside :mod:`deniable.estimation`, and takes the
question and its additive sufficient statistics (``Question.statistics``,
summed over batches).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .estimation import DEFAULT_BETA, estimate_frequencies, estimate_mean

if TYPE_CHECKING:
    import numpy as np

    from .survey import Question

__all__ = ["question_results"]


def question_results(
    question: Question, statistics: np.ndarray, n: int, *, beta: float | None = None
) -> dict[str, Any]:
    """The published result for ``question`` from ``n`` reports' summed ``statistics``.

    A numeric question gets its mean (:func:`deniable.estimation.estimate_mean`); a choice
    question its frequencies, one per category with the mechanism's own estimator; a
    multiple-choice question estimates every option on its own (each is a yes/no share, so
    the shares are not normalized to sum to one).
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
    if oracle.kind == "numeric":
        return {**summary, **estimate_mean(oracle, statistics, n, beta=beta).to_dict()}
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
    return {**summary, **result.to_dict(question.labels)}
