"""Crosstabs and comparisons as the API, CLI and dashboard serve them.

A crosstab of questions A and B counts every submission holding a report of
both (``storage.submissions``) and estimates with :mod:`deniable.crosstab`.
Folded statistics are cached per pair of questions (in the database, so every
process shares them) and folded forward from their watermark on each request,
so any pair can be asked for at any time, and a pair asked before costs only
the reports stored since.  Comparisons (:mod:`deniable.comparison`) take the
difference of two published estimates.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deniable import comparison
from deniable.crosstab import (
    Axis,
    CrosstabStatistics,
    axis,
    category_means,
    cell_model,
    crosstab_statistics,
    decode_stored,
    estimate_crosstab,
)
from deniable.errors import Conflict, InvalidParameter
from deniable.estimation import DEFAULT_BETA
from deniable.survey import Question, Survey

from .storage import Storage, SurveyRecord

PRIVACY = (
    "No extra privacy cost: a crosstab is computed from the reports the respondents already "
    "sent, whose privacy loss is the sum of the questions' epsilon (sequential composition); "
    "linking them is post-processing."
)


def unavailable_reason(storage: Storage, record: SurveyRecord) -> str | None:
    """Why this survey's answers cannot be joined, in words, or None when they can."""
    relay = getattr(record.survey, "relay", None)
    if relay is not None and getattr(relay, "shuffle_unit", "question") == "question":
        return (
            "crosstabs are unavailable for this survey: its relay shuffles each question's "
            "answers separately, so one respondent's answers cannot be joined"
        )
    loose = storage.unjoinable_reports(record.id)
    if loose:
        return (
            f"crosstabs are unavailable for this survey: {loose} of its reports were stored "
            "without their submission (before this aggregator recorded submissions, or sent "
            "to the bulk route as loose reports), so their answers cannot be joined"
        )
    return None


def _question(survey: Survey, question_id: str | None, what: str) -> Question:
    if not question_id:
        raise InvalidParameter(f"{what} must name a question of survey {survey.id!r}")
    if question_id not in survey.question_id_set:
        raise InvalidParameter(f"{what}: survey {survey.id!r} has no question {question_id!r}")
    return survey.question(question_id)


def _axis(question: Question) -> Axis:
    return axis(question.oracle)


def folded_statistics(
    storage: Storage, record: SurveyRecord, rows: Question, columns: Question
) -> CrosstabStatistics:
    """The pair's statistics over every stored submission: cached, folded forward, stored."""
    pair = tuple(sorted((rows.id, columns.id)))
    first, second = (rows, columns) if pair[0] == rows.id else (columns, rows)
    first_axis, second_axis = _axis(first), _axis(second)
    cached = storage.cached_crosstab(record.id, pair)
    after, statistics = 0, CrosstabStatistics.zeros(first_axis.size, second_axis.size)
    if cached is not None:
        after, statistics = cached[0], CrosstabStatistics.from_dict(cached[1])
    through, found = storage.joined_reports(record.id, pair, after)
    if found[first.id][0] and found[second.id][0]:
        statistics = statistics + _joined(first_axis, second_axis, first.id, second.id, found)
    if through > after:
        storage.store_crosstab(record.id, pair, through, statistics.to_dict())
    if first is rows:
        return statistics
    return statistics.transposed()


def _joined(
    first: Axis, second: Axis, first_id: str, second_id: str, found: dict[str, tuple[str, str]]
) -> CrosstabStatistics:
    """Statistics of the submissions holding both questions (``storage.joined_reports``)."""
    keys = []
    for question_id in (first_id, second_id):
        text = found[question_id][0]
        keys.append(np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, int))
    _, left, right = np.intersect1d(keys[0], keys[1], assume_unique=True, return_indices=True)
    batches = [
        decode_stored(axis_.mechanism, found[question_id][1])[rows]
        for axis_, question_id, rows in ((first, first_id, left), (second, second_id, right))
    ]
    return crosstab_statistics(first, second, *batches)


def _describe(question: Question) -> dict[str, Any]:
    return {"question": question.id, "text": question.text, "type": question.type,
            "mechanism": question.mechanism, "epsilon": question.epsilon,
            "labels": question.labels}  # fmt: skip


def crosstab_document(
    storage: Storage, record: SurveyRecord, rows_id: str | None, columns_id: str | None,
    *, beta: float = DEFAULT_BETA, compare: tuple[tuple[str, str], tuple[str, str]] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The crosstab of two questions (joint shares, or a number's mean by category)."""
    survey = record.survey
    rows = _question(survey, rows_id, "rows")
    columns = _question(survey, columns_id, "columns")
    if rows.id == columns.id:
        raise InvalidParameter("rows and columns must be two different questions")
    if rows.type == "numeric" and columns.type == "numeric":
        raise InvalidParameter("a crosstab needs at least one question that is not numeric")
    head = {
        "survey": record.id,
        "title": survey.title,
        "status": record.status,
        "rows": _describe(rows),
        "columns": _describe(columns),
        "epsilon": rows.epsilon + columns.epsilon,
        "privacy": PRIVACY,
        "beta": beta,
    }
    reason = unavailable_reason(storage, record)
    if reason is not None:
        raise Conflict(reason)
    statistics = folded_statistics(storage, record, rows, columns)
    if statistics.n == 0:
        return {**head, "kind": "empty", "n": 0, "estimate": None}
    if columns.type == "numeric" or rows.type == "numeric":
        categorical, numeric = (rows, columns) if columns.type == "numeric" else (columns, rows)
        if categorical is columns:
            statistics = statistics.transposed()
        means = category_means(_axis(categorical), _axis(numeric), statistics, beta=beta)
        return {**head, "kind": "means", "by": categorical.id, "of": numeric.id,
                **means.to_dict(categorical.labels)}  # fmt: skip
    row_axis, column_axis = _axis(rows), _axis(columns)
    estimate = estimate_crosstab(row_axis, column_axis, statistics, beta=beta)
    document = {**head, "kind": "joint", **estimate.to_dict(rows.labels, columns.labels)}
    if compare is not None:
        document["comparison"] = compare_cells(estimate, rows, columns, row_axis, column_axis,
                                               compare, beta)  # fmt: skip
    return document


def _cell_index(rows: Question, columns: Question, cell: tuple[str, str]) -> tuple[int, int]:
    row, column = cell
    if row not in rows.labels or column not in columns.labels:
        raise InvalidParameter(
            f"no cell ({row!r}, {column!r}): rows are {rows.labels}, columns {columns.labels}"
        )
    return rows.labels.index(row), columns.labels.index(column)


def compare_cells(
    estimate: Any, rows: Question, columns: Question, row_axis: Axis, column_axis: Axis,
    cells: tuple[tuple[str, str], tuple[str, str]], beta: float,
) -> dict[str, Any]:  # fmt: skip
    """The difference of two cells of one crosstab (same respondents: dependence 'any')."""
    deviation = cell_model(row_axis, column_axis).deviation
    figures = [comparison.cell_figure(estimate, *_cell_index(rows, columns, cell), deviation)
               for cell in cells]  # fmt: skip
    result = comparison.difference(figures[0], figures[1], dependence="any", beta=beta)
    return {"first": list(cells[0]), "second": list(cells[1]), **result.to_dict(),
            "sentence": result.sentence(verb="differs")}  # fmt: skip


# -- comparisons of one question between two surveys ------------------------------------------


def question_figures(question: Question, statistics: Any, n: int) -> list[comparison.Figure]:
    """One :class:`~deniable.comparison.Figure` per published estimate of a question."""
    oracle = question.oracle
    if question.type == "numeric":
        return [comparison.mean_figure(oracle, statistics, n)]
    per_option = getattr(oracle, "option_oracle", oracle)
    return comparison.frequency_figures(per_option, statistics, n)


def compare_document(
    first: tuple[SurveyRecord, Question, Any], second: tuple[SurveyRecord, Question, Any],
    *, beta: float = DEFAULT_BETA,
) -> dict[str, Any]:  # fmt: skip
    """Per category: the later survey's estimate minus the earlier's (``second - first``).

    Each ``(record, question, folded statistics)``.  Two waves of one memoized
    longitudinal question (same key) have non-negatively correlated reports;
    any other pair of surveys is independent (``deniable.comparison``).
    """
    (record_a, question_a, folded_a), (record_b, question_b, folded_b) = first, second
    if question_a.type != question_b.type or question_a.labels != question_b.labels:
        raise InvalidParameter(
            f"questions {question_a.id!r} and {question_b.id!r} differ in type or options"
        )
    if question_a.type == "numeric" and (question_a.lo, question_a.hi) != (
        question_b.lo,
        question_b.hi,
    ):
        raise InvalidParameter("numeric questions must share their range to be compared")
    head = {"first": {"survey": record_a.id, "question": question_a.id, "n": folded_a.n},
            "second": {"survey": record_b.id, "question": question_b.id, "n": folded_b.n},
            "beta": beta}  # fmt: skip
    if folded_a.n == 0 or folded_b.n == 0:
        return {**head, "comparisons": None}
    memoized = (question_a.longitudinal is not None and question_b.longitudinal is not None
                and question_a.longitudinal.key == question_b.longitudinal.key)  # fmt: skip
    dependence = "nonnegative" if memoized else "independent"
    before = question_figures(question_a, folded_a.statistics, folded_a.n)
    after = question_figures(question_b, folded_b.statistics, folded_b.n)
    numeric = question_a.type == "numeric"
    rows = []
    for label, old, new in zip(question_a.labels, before, after, strict=True):
        single = comparison.difference(new, old, dependence=dependence, beta=beta)
        together = comparison.difference(new, old, dependence=dependence, beta=beta,
                                         claims=len(before))  # fmt: skip
        rows.append({
            "label": label, "first": old.value, "second": new.value, **single.to_dict(),
            "simultaneous_lower": together.lower, "simultaneous_upper": together.upper,
            "sentence": single.sentence(unit="", scale=1.0, digits=2)
            if numeric else single.sentence(),
        })  # fmt: skip
    return {**head, "dependence": dependence, "comparisons": rows}
