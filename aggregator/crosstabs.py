"""Crosstabs and comparisons as the API, CLI and dashboard serve them.

A crosstab of questions A and B counts every submission holding a report of
both (``storage.submissions``) and estimates with :mod:`deniable.crosstab`.
Folded statistics are cached per pair of questions (in the database, so every
process shares them) and folded forward from their watermark on each request,
so any pair can be asked for at any time, and a pair asked before costs only
the reports stored since.  Comparisons (:mod:`deniable.comparison`) take the
difference of two published estimates (for a question with non-response or a scale,
of each wave's published ratio figures).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deniable import comparison
from deniable.crosstab import (
    Axis,
    CrosstabStatistics,
    axis,
    cell_model,
    check_nonresponse,
    check_pair,
    decode_stored,
    estimate_crosstab,
    join_submissions,
    question_crosstab,
)
from deniable.errors import Conflict, InvalidParameter
from deniable.estimation import DEFAULT_BETA
from deniable.survey import Question, Survey

from .relay_noise import question_noise
from .storage import Storage, SurveyRecord

__all__ = [
    "compare_document",
    "FIGURE_WORDS",
    "counted_words",
    "crosstab_document",
    "folded_statistics",
    "label_words",
    "short_text",
    "unavailable_reason",
]

# A comparison's rows that are figures, not answers, in words (the data keeps the id).
FIGURE_WORDS = {"mean": "Average", "nps": "Net promoter score"}

# A question's text in a table's corner or a column's head: at most this many characters.
SHORT_TEXT = 40


def short_text(text: str, limit: int = SHORT_TEXT) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters, "…" marking a cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0] if " " in text[: limit - 1] else text[: limit - 1]
    return cut.rstrip(" ,;:") + "…"


def label_words(question: Any, labels: Any = ()) -> dict[str, str]:
    """A question's labels as the results page words them ("No"/"Yes", "Prefer not to say",
    "Not asked (did not apply)"): :func:`deniable.aggregator.respond.words.answer_words`.
    ``question``: a mapping with its ``type`` (a crosstab document's side) or a question."""
    from .respond.words import answer_words  # the respond page's catalogue (needs Flask)

    if not isinstance(question, dict):
        question = question.to_dict()
    return answer_words(question, labels)


def counted_words(document: dict[str, Any]) -> str:
    """Whom a crosstab's n counts, in the table's own terms: everyone who answered both,
    everyone with "Prefer not to say" and "Not asked" rows or columns (a question that may
    go unanswered), or, with them hidden, everyone while the table leaves them out."""
    sides = (document["rows"], document["columns"])
    if document.get("kind") == "means":  # the measured question's mean is among its answers
        sides = tuple(side for side in sides if side["question"] == document["by"])
    extras = [e for side in sides for e in side["extras"]]
    if not extras:
        return "respondents who answered both"
    if document.get("nonresponse") == "hide":
        return "respondents in all, those who did not answer left out of the table"
    words = label_words({})
    named = " and ".join(f"“{words[e]}”" for e in dict.fromkeys(extras))
    return f"respondents, {named} counted as answers"


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
    sides = []
    for axis_, question_id in ((first, first_id), (second, second_id)):
        keys, payloads = found[question_id]
        parsed = np.fromstring(keys, dtype=np.int64, sep=",") if keys else np.zeros(0, np.int64)
        sides.append((parsed, decode_stored(axis_.mechanism, payloads)))
    return join_submissions(first, second, *sides[0], *sides[1])


def crosstab_document(
    storage: Storage,
    record: SurveyRecord,
    rows_id: str | None,
    columns_id: str | None,
    *,
    beta: float = DEFAULT_BETA,
    compare: tuple[tuple[str, str], tuple[str, str]] | None = None,
    nonresponse: str | None = None,
) -> dict[str, Any]:
    """The crosstab of two questions (joint shares, or a number's or a scale's mean by
    category); ``nonresponse`` ``show`` (default) or ``hide`` (``deniable.crosstab``)."""
    survey = record.survey
    rows = _question(survey, rows_id, "rows")
    columns = _question(survey, columns_id, "columns")
    check_pair(rows, columns)
    nonresponse = check_nonresponse(nonresponse)
    hidden = nonresponse == "hide" and bool(rows.extras or columns.extras)
    if compare is not None and hidden:
        raise InvalidParameter(
            "a difference of two cells is of shares of all respondents: show declined and "
            "not applicable (nonresponse=show) to compare two cells"
        )
    head = {"survey": record.id, "title": survey.title, "status": record.status}
    reason = unavailable_reason(storage, record)
    if reason is not None:
        raise Conflict(reason)
    statistics = folded_statistics(storage, record, rows, columns)
    crosstab = question_crosstab(rows, columns, statistics, beta=beta, nonresponse=nonresponse)
    document = {**head, **crosstab}
    if compare is not None and document["kind"] == "joint":
        row_axis, column_axis = axis(rows.oracle), axis(columns.oracle)
        estimate = estimate_crosstab(row_axis, column_axis, statistics, beta=beta)
        document["comparison"] = compare_cells(
            estimate, rows, columns, row_axis, column_axis, compare, beta
        )
    return document


def _cell_index(rows: Question, columns: Question, cell: tuple[str, str]) -> tuple[int, int]:
    row, column = cell
    if row not in rows.labels or column not in columns.labels:
        raise InvalidParameter(
            f"no cell ({row!r}, {column!r}): rows are {rows.labels}, columns {columns.labels}"
        )
    return rows.labels.index(row), columns.labels.index(column)


def compare_cells(
    estimate: Any,
    rows: Question,
    columns: Question,
    row_axis: Axis,
    column_axis: Axis,
    cells: tuple[tuple[str, str], tuple[str, str]],
    beta: float,
) -> dict[str, Any]:
    """The difference of two cells of one crosstab (same respondents: dependence 'any')."""
    deviation = cell_model(row_axis, column_axis).deviation
    figures = [
        comparison.cell_figure(estimate, *_cell_index(rows, columns, cell), deviation)
        for cell in cells
    ]
    result = comparison.difference(figures[0], figures[1], dependence="any", beta=beta)
    return {
        "first": list(cells[0]),
        "second": list(cells[1]),
        **result.to_dict(),
        "sentence": result.sentence(verb="differs"),
    }


# -- comparisons of one question between two surveys ------------------------------------------


def compare_document(
    first: tuple[SurveyRecord, Question, Any],
    second: tuple[SurveyRecord, Question, Any],
    *,
    beta: float = DEFAULT_BETA,
    storage: Any = None,
) -> dict[str, Any]:
    """Per category: the later survey's estimate minus the earlier's (``second - first``).

    Each ``(record, question, folded statistics)``; see
    :func:`deniable.comparison.compare_question`.  With ``storage``, a side whose relay
    added dummy reports is compared with them taken out (:mod:`.relay_noise`), n its
    real respondents.
    """
    (record_a, question_a, folded_a), (record_b, question_b, folded_b) = first, second
    noises, counts = [], []
    for record, question, folded in (first, second):
        noise, dummies = None, 0
        if storage is not None and getattr(record.survey, "relay", None) is not None:
            summary = storage.relay.batch_summary(record.id)
            noise, dummies = question_noise(record, question, summary)
        noises.append(noise)
        counts.append(max(folded.n - dummies, 0))
    body = comparison.compare_question(
        question_a,
        folded_a.statistics,
        counts[0],
        question_b,
        folded_b.statistics,
        counts[1],
        beta=beta,
        noises=(noises[0], noises[1]),
    )
    return {
        "first": {"survey": record_a.id, "question": question_a.id, "n": counts[0]},
        "second": {"survey": record_b.id, "question": question_b.id, "n": counts[1]},
        "beta": beta,
        **body,
    }
