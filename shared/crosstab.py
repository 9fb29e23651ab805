"""Crosstabs of two questions of a survey, written once on the oracle layer.

The parts, each in its own module:

* ``deniable.crosstab_statistics``: each report's scores per category (the per-report
  unbiased estimates ê of Wang, Blocki, Li, Jha, USENIX Security 2017 for the pure
  frequency oracles, and their relatives) and the additive joint statistics;
* ``deniable.crosstab_joint``: the joint table of two categorical questions, each cell
  unbiased with every interval family, and each answer cell's share among those who
  answered both (a ratio of unbiased estimates, union-bound intervals);
* ``deniable.crosstab_means``: a number's or a scale's mean for each answer to the
  other question (ratios of unbiased estimates, the same construction).

This module publishes them (:func:`question_crosstab`, the document the API, the CLI,
the dashboard and ``deniable.analysis`` show) and keeps the names callers import.

Non-response (docs/protocol.md §5.5): declining and not being asked are values of a
question's randomized domain, so a crosstab over every respondent shows them as rows or
columns (``nonresponse="show"``, shares of everyone).  With ``nonresponse="hide"`` a joint
table shows the answers only, each cell's share among those who answered both questions,
and means are shown for the answer groups only; a mean is always among those who
answered the measured question.
"""

from __future__ import annotations

from typing import Any

from .crosstab_joint import (
    AnsweredCrosstab,
    CrosstabEstimate,
    cell_model,
    cell_variances,
    estimate_answered,
    estimate_crosstab,
    exact_variance,
    joint_estimates,
    marginal_estimates,
)
from .crosstab_means import CategoryMeans, category_means, scale_means, status_means
from .crosstab_statistics import (
    Axis,
    CrosstabStatistics,
    StatusAxis,
    axis,
    crosstab_statistics,
    decode_stored,
    join_submissions,
    support_rows,
    wire_crosstab_statistics,
)
from .errors import InvalidParameter
from .estimation import DEFAULT_BETA, check_beta
from .questionnaire import SCALE_POINTS

__all__ = [
    "NONRESPONSE",
    "PRIVACY",
    "AnsweredCrosstab",
    "Axis",
    "CategoryMeans",
    "CrosstabEstimate",
    "CrosstabStatistics",
    "StatusAxis",
    "axis",
    "category_means",
    "cell_model",
    "cell_variances",
    "check_nonresponse",
    "check_pair",
    "crosstab_kind",
    "crosstab_statistics",
    "decode_stored",
    "estimate_answered",
    "estimate_crosstab",
    "exact_variance",
    "join_submissions",
    "joint_estimates",
    "marginal_estimates",
    "question_crosstab",
    "scale_means",
    "status_means",
    "support_rows",
    "wire_crosstab_statistics",
]

PRIVACY = (
    "No extra privacy cost: a crosstab is computed from the reports the respondents already "
    "sent, whose privacy loss is the sum of the questions' epsilon (sequential composition); "
    "linking them is post-processing."
)
# Show declined / not applicable as rows, columns and groups, or hide them (shares among
# those who answered).
NONRESPONSE = ("show", "hide")


def check_nonresponse(value: object) -> str:
    """``show`` or ``hide`` (default ``show``), or InvalidParameter in words."""
    if value is None or value == "":
        return "show"
    if value not in NONRESPONSE:
        raise InvalidParameter(
            f"nonresponse must be show or hide (declined and not applicable as rows, or "
            f"shares among those who answered), got {value!r}"
        )
    return str(value)


def check_pair(rows: Any, columns: Any) -> None:
    """InvalidParameter unless two questions can be crosstabbed (``deniable.survey.Question``)."""
    if rows.id == columns.id:
        raise InvalidParameter("rows and columns must be two different questions")
    if rows.type == "numeric" and columns.type == "numeric":
        raise InvalidParameter("a crosstab needs at least one question that is not numeric")


def crosstab_kind(rows: Any, columns: Any) -> tuple[str, Any, Any]:
    """(kind, grouping question, measured question): ``means`` of a number (or, without one,
    of a scale: the columns' when both are scales) by the other question, else ``joint``."""
    check_pair(rows, columns)
    for kind in ("numeric", "scale"):
        if columns.type == kind:
            return "means", rows, columns
        if rows.type == kind:
            return "means", columns, rows
    return "joint", rows, columns


def _shown_labels(question: Any, nonresponse: str) -> list[str]:
    return question.base_labels if nonresponse == "hide" else question.labels


def describe(question: Any, nonresponse: str = "show") -> dict[str, Any]:
    return {
        "question": question.id,
        "text": question.text,
        "type": question.type,
        "mechanism": question.mechanism,
        "epsilon": question.epsilon,
        "labels": _shown_labels(question, nonresponse),
        "extras": list(question.extras),
    }


def _means(groups: Any, measured: Any, statistics: CrosstabStatistics, beta: float, hide: bool):
    group_axis, measured_axis = axis(groups.oracle), axis(measured.oracle)
    shown = range(groups.base_size) if hide else None
    if measured.type == "scale":
        points = SCALE_POINTS[int(measured.points)]
        return scale_means(
            group_axis,
            measured_axis,
            statistics,
            points=points,
            extras=len(measured.extras),
            beta=beta,
            shown=shown,
        )
    if isinstance(measured_axis, StatusAxis):
        return status_means(group_axis, measured_axis, statistics, beta=beta, shown=shown)
    return category_means(group_axis, measured_axis, statistics, beta=beta, shown=shown)


def question_crosstab(
    rows: Any,
    columns: Any,
    statistics: CrosstabStatistics,
    *,
    beta: float = DEFAULT_BETA,
    nonresponse: str = "show",
) -> dict[str, Any]:
    """The published crosstab of two questions of a survey, from their joined statistics.

    ``kind`` is ``joint`` (:func:`estimate_crosstab`, or with ``nonresponse="hide"`` and a
    question with extras :func:`estimate_answered`), ``means`` (a number's or a scale's
    mean by the other question's answers: :mod:`deniable.crosstab_means`) or ``empty``
    (nobody answered both).
    """
    kind, groups, measured = crosstab_kind(rows, columns)
    beta = check_beta(beta)
    nonresponse = check_nonresponse(nonresponse)
    hide = nonresponse == "hide"
    head = {
        "rows": describe(rows, nonresponse),
        "columns": describe(columns, nonresponse),
        "beta": beta,
        "epsilon": rows.epsilon + columns.epsilon,
        "privacy": PRIVACY,
        "nonresponse": nonresponse,
    }
    if statistics.n == 0:
        return {**head, "kind": "empty", "n": 0, "estimate": None}
    if kind == "means":
        if groups is columns:
            statistics = statistics.transposed()
        means = _means(groups, measured, statistics, beta, hide)
        labels = _shown_labels(groups, nonresponse)
        return {
            **head,
            "kind": "means",
            "by": groups.id,
            "of": measured.id,
            "among": "answered" if measured.extras else "all",
            **means.to_dict(labels),
        }
    row_axis, column_axis = axis(rows.oracle), axis(columns.oracle)
    if hide and (rows.extras or columns.extras):
        answered = estimate_answered(
            row_axis,
            column_axis,
            statistics,
            row_extras=len(rows.extras),
            column_extras=len(columns.extras),
            beta=beta,
        )
        return {**head, "kind": "joint", **answered.to_dict(rows.base_labels, columns.base_labels)}
    estimate = estimate_crosstab(row_axis, column_axis, statistics, beta=beta)
    return {
        **head,
        "kind": "joint",
        "share_of": "all",
        **estimate.to_dict(rows.labels, columns.labels),
    }
