"""Crosstabs and comparisons: JSON or CSV, as private as the surveys' results.

``GET /surveys/<id>/crosstab?rows=<q1>&columns=<q2>``: joint shares of two
questions (or a number's or a scale's mean by category), with an optional
difference of two cells (``first_row``, ``first_column``, ``second_row``,
``second_column``); ``nonresponse=hide`` leaves out declined and not applicable
(shares among those who answered both; ``show``, the default, keeps them as rows,
columns and groups).  ``GET /surveys/<id>/compare?question=<q>&with=<survey>``:
each estimate of the same question in another survey (a later wave) minus
this survey's.  Both take ``beta`` and ``format`` like the results.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from flask import Blueprint, Response, request

from deniable.errors import AuthenticationError, Forbidden, InvalidParameter

from ..crosstabs import compare_document, crosstab_document
from ..storage import SurveyRecord, current_storage
from .common import bearer_token, is_operator, json_response, require_operator
from .results import _cell, parse_beta, wants_csv

__all__ = ["blueprint"]

blueprint = Blueprint("crosstab", __name__)

JOINT_COLUMNS = (
    "row",
    "column",
    "estimate",
    "lower",
    "upper",
    "simultaneous_lower",
    "simultaneous_upper",
    "chebyshev_exact_lower",
    "chebyshev_exact_upper",
    "chebyshev_exact_simultaneous_lower",
    "chebyshev_exact_simultaneous_upper",
    "bernstein_lower",
    "bernstein_upper",
    "bernstein_simultaneous_lower",
    "bernstein_simultaneous_upper",
    "clipped",
)
MEANS_COLUMNS = (
    "label",
    "mean",
    "lower",
    "upper",
    "simultaneous_lower",
    "simultaneous_upper",
    "share",
    "answered",
)
COMPARE_COLUMNS = (
    "label",
    "first",
    "second",
    "difference",
    "lower",
    "upper",
    "half_width",
    "simultaneous_lower",
    "simultaneous_upper",
    "tightest",
    "sentence",
    "share_of",
)


def readable_record(survey_id: str) -> SurveyRecord:
    """The survey, if its results may be read: public, or the operator asks (401/403 otherwise)."""
    storage = current_storage()
    record = storage.get_survey(survey_id, count=False)
    route = (request.view_args or {}).get("survey_id")
    if record.results_public:
        is_operator()  # Why: a wrong token is refused (403) even where none is needed.
    elif survey_id == route:
        require_operator()
    else:  # the other survey of a comparison: the token must be valid for it too
        token = bearer_token()
        if token is None:
            raise AuthenticationError("this request needs an operator token (Authorization)")
        found = storage.find_operator_token(token)
        if found is None or not found.may_act_on(survey_id):
            raise Forbidden(f"this operator token cannot read survey {survey_id!r}")
    return record


def _csv(rows: list[dict[str, Any]], columns: tuple[str, ...], name: str) -> Response:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, columns, extrasaction="ignore", lineterminator="\r\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({column: _cell(row.get(column)) for column in columns})
    response = Response(buffer.getvalue(), mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="{name}.csv"'
    return response


@blueprint.get("/surveys/<survey_id>/crosstab")
def crosstab(survey_id: str) -> Response:
    beta = parse_beta()
    csv_wanted = wants_csv()
    args = request.args
    compare = None
    cells = [
        args.get(name) for name in ("first_row", "first_column", "second_row", "second_column")
    ]
    if any(cells):
        if not all(cells):
            raise InvalidParameter(
                "a cell comparison needs first_row, first_column, second_row and second_column"
            )
        compare = ((cells[0], cells[1]), (cells[2], cells[3]))
    record = readable_record(survey_id)
    document = crosstab_document(
        current_storage(),
        record,
        args.get("rows"),
        args.get("columns"),
        beta=beta,
        compare=compare,
        nonresponse=args.get("nonresponse"),
    )
    if not csv_wanted:
        return json_response(document)
    name = f"{survey_id}-crosstab-{document['rows']['question']}-{document['columns']['question']}"
    if document["kind"] == "means":
        return _csv(document["categories"], MEANS_COLUMNS, name)
    return _csv(document.get("cells", []), JOINT_COLUMNS, name)


@blueprint.get("/surveys/<survey_id>/compare")
def compare(survey_id: str) -> Response:
    beta = parse_beta()
    csv_wanted = wants_csv()
    args = request.args
    question_id, other_id = args.get("question"), args.get("with")
    if not question_id or not other_id:
        raise InvalidParameter("compare needs question=<question id> and with=<survey id>")
    other_question_id = args.get("with_question") or question_id
    storage = current_storage()
    sides = []
    for record_id, qid in ((survey_id, question_id), (other_id, other_question_id)):
        record = readable_record(record_id)
        if qid not in record.survey.question_id_set:
            raise InvalidParameter(f"survey {record_id!r} has no question {qid!r}")
        folded = storage.fold(record_id)[qid]
        sides.append((record, record.survey.question(qid), folded))
    document = compare_document(sides[0], sides[1], beta=beta, storage=storage)
    if not csv_wanted:
        return json_response(document)
    return _csv(
        document["comparisons"] or [], COMPARE_COLUMNS, f"{survey_id}-{other_id}-{question_id}"
    )
