"""Dashboard pages for crosstabs and comparisons, on the dashboard's blueprint.

``/surveys/<id>/crosstab?rows=<q1>&columns=<q2>``: the joint shares as a table
shaded like a heat map (darker: larger share), each cell with its interval,
or a number's or a scale's mean by category; questions are picked with links and,
when one of them may go unanswered, two more links show or hide "Prefer not to say" and
"Not asked" (``nonresponse=show|hide``: hidden, the shares are among those who answered
both).  Links, not a form: the dashboard's pages run no script and submit no form (its
CSP says ``form-action 'none'``).  ``/surveys/<id>/compare/<other>``: every question the
two surveys share, each category's change in words ("changed by +6 points (±4)").
Private surveys show a notice, as the survey page does.
"""

from __future__ import annotations

from typing import Any

from flask import render_template, request, url_for

from deniable import comparison
from deniable.crosstab import axis, cell_model, check_nonresponse
from deniable.errors import Conflict, InvalidParameter, NotFound
from deniable.questionnaire import EXTRA_LABELS

from ..api.common import check_survey_id
from ..crosstabs import (
    FIGURE_WORDS,
    compare_document,
    counted_words,
    crosstab_document,
    label_words,
    short_text,
    unavailable_reason,
)
from ..respond.words import answer_words
from ..storage import current_storage
from . import blueprint, svg
from .present import COVERS, confidence_text

__all__ = ["comparable_surveys"]

# Cell shading: lightness from LIGHTEST (share 0) to DARKEST (share 1) at this hue; dark text
# stays above 4.5:1 contrast on the darkest shade (WCAG 2.2 AA).
HUE, SATURATION, LIGHTEST, DARKEST = 212, 62, 98, 70


def shade(share: float) -> str:
    share = min(max(float(share), 0.0), 1.0)
    return f"hsl({HUE} {SATURATION}% {LIGHTEST - (LIGHTEST - DARKEST) * share**0.5:.1f}%)"


def percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


# The non-response values in the respond page's words (one catalogue for every page).
PLAIN_LABELS = answer_words({})


def _beta() -> float:
    from ..api.results import parse_beta

    return parse_beta()


def _missing(survey_id: str, error: str | None = None, status: int = 404) -> tuple[str, int]:
    return render_template("missing.html", survey_id=survey_id, error=error), status


def spread_within_columns(document: dict[str, Any], rows: Any, columns: Any) -> list[dict]:
    """Per column: its largest cell minus its smallest, as "differs by +6 points (±4)".

    Every pair of rows in every column is claimed at once (union bound over
    C(d_rows, 2) x d_columns differences), so showing the pair the data picked
    (largest, smallest) keeps the guarantee.
    """
    labels = document["rows"]["labels"]
    if len(labels) < 2:
        return []
    deviation = cell_model(axis(rows.oracle), axis(columns.oracle)).deviation / document["n"]
    claims = len(labels) * (len(labels) - 1) // 2 * len(document["columns"]["labels"])
    cells = {(c["row"], c["column"]): c["estimate"] for c in document["cells"]}
    found = []
    for column in document["columns"]["labels"]:
        ranked = sorted(labels, key=lambda row: cells[row, column])
        low, high = ranked[0], ranked[-1]
        figures = [
            comparison.Figure(
                value=cells[row, column],
                variance_bound=document["variance_bound"],
                deviation=deviation,
            )
            for row in (high, low)
        ]
        result = comparison.difference(
            *figures, dependence="any", beta=document["beta"], claims=claims
        )
        found.append(
            {
                "column": column,
                "high": high,
                "low": low,
                "sentence": result.sentence(verb="differs"),
                "significant": result.to_dict()["significant"],
            }
        )
    return found


def _share(value: float | None) -> str:
    """A share as shown: an unbiased estimate may fall outside 0-100%; shown at the nearer end."""
    return percent(None if value is None else min(max(value, 0.0), 1.0))


def _joint_view(document: dict[str, Any]) -> dict[str, Any]:
    family = document["simultaneous_tightest"]
    prefix = "" if family in ("chebyshev", "ratio") else family + "_"
    rows, columns = document["rows"]["labels"], document["columns"]["labels"]
    cells = {(c["row"], c["column"]): c for c in document["cells"]}
    # Shaded relative to the largest cell: the pattern is what a heat map shows.
    largest = max([c["clipped"] or 0.0 for c in document["cells"]] + [1e-9])
    row_words = label_words(document["rows"], rows)
    column_words = label_words(document["columns"], columns)
    table = []
    for row in rows:
        line = []
        for column in columns:
            cell = cells[row, column]
            low, high = cell[prefix + "simultaneous_lower"], cell[prefix + "simultaneous_upper"]
            line.append(
                {
                    "text": _share(cell["estimate"]),
                    "raw": cell["estimate"],
                    "low": percent(low),
                    "high": percent(high),
                    "style": f"background: {shade((cell['clipped'] or 0.0) / largest)}",
                }
            )
        table.append(
            {
                "label": row_words.get(row, row),
                "cells": line,
                "share": _share(document["row_shares"][row]),
            }
        )
    return {
        "table": table,
        "columns": [column_words.get(column, column) for column in columns],
        "row_words": row_words,
        "column_words": column_words,
        "corner": (short_text(document["rows"]["text"]), short_text(document["columns"]["text"])),
        "column_shares": [_share(document["column_shares"][c]) for c in columns],
        "family": svg.FAMILY_NAMES.get(family, family),
        # Shares add up to 100% only when neither question is multiple choice.
        "partition": "multiple_choice"
        not in (document["rows"]["type"], document["columns"]["type"]),
    }


@blueprint.get("/surveys/<survey_id>/crosstab")
def crosstab_page(survey_id: str) -> str | tuple[str, int]:
    try:
        check_survey_id(None, {"survey_id": survey_id})
        record = current_storage().get_survey(survey_id, count=False)
    except NotFound:
        return _missing(survey_id)
    try:
        beta = _beta()
        nonresponse = check_nonresponse(request.args.get("nonresponse"))
    except InvalidParameter as error:
        return _missing(survey_id, str(error), 400)
    questions = record.survey.questions
    choices = [q for q in questions if q.type != "numeric"]
    rows_id = request.args.get("rows") or (choices[0].id if choices else questions[0].id)
    columns_id = request.args.get("columns") or next(
        (q.id for q in questions if q.id != rows_id), rows_id
    )
    document, error, unavailable = None, None, None
    if record.results_public:
        unavailable = unavailable_reason(current_storage(), record)
        try:
            document = crosstab_document(
                current_storage(), record, rows_id, columns_id, beta=beta, nonresponse=nonresponse
            )
        except (InvalidParameter, Conflict) as problem:
            error = str(problem)
    kept = {"beta": beta} if "beta" in request.args else {}
    extra = {**kept, **({"nonresponse": "hide"} if nonresponse == "hide" else {})}

    def link(rows: str, columns: str) -> str:
        return url_for(
            "dashboard.crosstab_page", survey_id=record.id, rows=rows, columns=columns, **extra
        )

    view = None
    if document is not None and document.get("n") and document["kind"] == "joint":
        view = _joint_view(document)
        survey = record.survey
        view["spread"] = (
            []  # a share among those who answered is a ratio: no variance-based difference
            if document.get("share_of") == "answered"
            else spread_within_columns(
                document, survey.question(rows_id), survey.question(columns_id)
            )
        )
    # The show/hide links, when they change something: a joint table with a question that
    # may go unanswered, or means by such a question (a mean is always among those who
    # answered the measured question).
    toggle, sides = None, []
    if document is not None and document.get("kind") == "means":
        sides = [document["rows"] if document["by"] == rows_id else document["columns"]]
    elif document is not None:
        sides = [document["rows"], document["columns"]]
    extras = sorted({e for side in sides for e in side["extras"]}, key=EXTRA_LABELS.index)
    if extras:
        joint = document["kind"] != "means"
        named = " and ".join(f"“{PLAIN_LABELS[e]}”" for e in extras)
        toggle = {
            "short": "Not answered",
            "words": f"Show or hide {named}",
            "choices": [
                {
                    "value": value,
                    "text": text,
                    "current": nonresponse == value,
                    "href": url_for(
                        "dashboard.crosstab_page",
                        survey_id=record.id,
                        rows=rows_id,
                        columns=columns_id,
                        **kept,
                        **({"nonresponse": "hide"} if value == "hide" else {}),
                    ),
                }
                for value, text in (
                    ("show", f"Show {named}"),
                    (
                        "hide",
                        "Hide them: shares among those who answered"
                        if joint
                        else "Hide them: the answers' averages only",
                    ),
                )
            ],
        }
    means = None
    if document is not None and document.get("n") and document["kind"] == "means":
        by = (
            document["rows"]
            if document["by"] == document["rows"]["question"]
            else document["columns"]
        )
        said = label_words(by, by["labels"])
        means = [{**c, "words": said.get(c["label"], c["label"])} for c in document["categories"]]
    return render_template(
        "crosstab.html",
        survey=record,
        public=record.results_public,
        rows=rows_id,
        columns=columns_id,
        row_links=[(q, link(q.id, columns_id)) for q in questions],
        column_links=[(q, link(rows_id, q.id)) for q in questions],
        document=document,
        view=view,
        means=means,
        counted=counted_words(document) if document and document.get("n") else "",
        toggle=toggle,
        plain=PLAIN_LABELS,
        error=error,
        unavailable=unavailable,
        level=confidence_text(beta),
        covers=COVERS,
        api_url=url_for(
            "crosstab.crosstab", survey_id=record.id, rows=rows_id, columns=columns_id, **extra
        ),
        csv_url=url_for(
            "crosstab.crosstab",
            survey_id=record.id,
            rows=rows_id,
            columns=columns_id,
            format="csv",
            **extra,
        ),
        survey_url=url_for("dashboard.survey", survey_id=record.id),
    )


@blueprint.get("/surveys/<survey_id>/compare/<other_id>")
def compare_page(survey_id: str, other_id: str) -> str | tuple[str, int]:
    storage = current_storage()
    try:
        for identifier in (survey_id, other_id):
            check_survey_id(None, {"survey_id": identifier})
        first, second = storage.get_survey(survey_id), storage.get_survey(other_id)
        beta = _beta()
    except NotFound:
        return _missing(other_id)
    except InvalidParameter as error:
        return _missing(survey_id, str(error), 400)
    sections = []
    public = first.results_public and second.results_public
    if public:
        folded = storage.fold(first.id), storage.fold(second.id)
        for question in first.survey.questions:
            if question.id not in second.survey.question_id_set:
                continue
            other = second.survey.question(question.id)
            try:
                document = compare_document(
                    (first, question, folded[0][question.id]),
                    (second, other, folded[1][question.id]),
                    beta=beta,
                    storage=storage,
                )
            except InvalidParameter:
                continue  # same id, different question: not comparable
            said = label_words(question, question.labels)
            sections.append(
                {"question": question, "document": document, "plain": {**FIGURE_WORDS, **said}}
            )
    return render_template(
        "compare.html",
        first=first,
        second=second,
        public=public,
        sections=sections,
        level=confidence_text(beta),
        plain=PLAIN_LABELS,
    )


# Surveys looked at for a "what changed" link on a survey page (the newest first).
COMPARABLE_SCAN = 50


def comparable_surveys(record: Any) -> list[Any]:
    """Public surveys created after this one that share a comparable question (the same id,
    type and options or range: :func:`deniable.comparison.comparable`), such as later waves."""
    if not record.results_public:
        return []
    storage = current_storage()
    mine = record.survey
    later = (
        storage.get_survey(other, count=False)
        for other in storage.later_public_surveys(record.id, COMPARABLE_SCAN)
    )
    return [
        other
        for other in later
        if any(
            comparison.comparable(mine.question(shared), other.survey.question(shared))
            for shared in mine.question_id_set & other.survey.question_id_set
        )
    ]
