"""Reports: one respondent's submission (public), bulk ingest and export (operator).

The public route takes one respondent's answers per request: a single report
or a batch with at most one report per question.  Many respondents per request
(a relay, an import, a benchmark) go to the bulk route, which needs an operator
token: otherwise one client, or one enrolment token, could weigh like a
thousand respondents (docs/threat-model.md).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator

from flask import Blueprint, Response, current_app, request, stream_with_context

from deniable.errors import Conflict, DeniableError, Forbidden, SurveyClosed
from deniable.service.limits import check_submission_address, current_limits
from deniable.service.problems import EnrolmentRequired, read_json
from deniable.wire import BulkBody, parse_submission

from ..storage import StoredReport, current_storage
from ..storage.tokens import is_enrolment_token
from .common import choice_parameter, json_response, require_operator

__all__ = ["blueprint"]

blueprint = Blueprint("reports", __name__)

EXPORT_COLUMNS = ("seq", "id", "question", "payload", "received_at", "submission")
# The one header that carries an enrolment token (docs/api.md).
ENROLMENT_HEADER = "X-Deniable-Enrolment"


def enrolment_token(survey_id: str) -> str:
    """The request's enrolment token: 401 if missing, 403 if it cannot be an issued one."""
    token = request.headers.get(ENROLMENT_HEADER, "").strip()
    if not token:
        raise EnrolmentRequired(
            f"survey {survey_id!r} requires an enrolment token (header {ENROLMENT_HEADER})"
        )
    if not is_enrolment_token(token):
        raise Forbidden(f"the enrolment token is not valid for survey {survey_id!r}")
    return token


def refuse_relayed(record) -> None:
    """403 for unsealed reports to a relayed survey: they go through its relay, sealed."""
    relay = getattr(record.survey, "relay", None)
    if relay is not None:
        raise Forbidden(
            f"survey {record.id!r} is relayed: send sealed reports to its relay "
            f"{relay.url}, never directly"
        )


@blueprint.post("/surveys/<survey_id>/reports")
def submit(survey_id: str) -> Response:
    """Store reports; the acknowledgement means they are committed.

    Order of refusals: rate limit by address (429), survey (404), body (400/413/415),
    enrolment token missing (401) or malformed (403) and rate limit by token (429)
    while the survey is open, validation (422/413, or 409 if the survey is closed);
    then, in the storing transaction, closed (409), token missing (401), forged or
    spent (403) and report id reuse (409).
    Nothing refused is stored, and a refused batch never spends its token.  A batch
    stored whole already is acknowledged again, spending no token, even once the
    survey has closed: a device whose acknowledgement was lost learns it was stored.
    """
    check_submission_address()
    storage = current_storage()
    record = storage.get_survey(survey_id, count=False)
    refuse_relayed(record)
    body = read_json()
    token = None
    if record.require_enrolment and record.is_open:
        token = enrolment_token(survey_id)
        current_limits().check_token(token)
    elif record.require_enrolment:  # closed: only a stored batch's retry passes, token checked
        token = request.headers.get(ENROLMENT_HEADER, "").strip() or None
    try:
        reports = parse_submission(
            body, record.survey, max_batch=current_app.config["MAX_BATCH"], one_respondent=True
        )
    except DeniableError:
        if not record.is_open:
            raise SurveyClosed(f"survey {survey_id!r} is closed") from None
        raise
    try:
        ids = storage.add_reports(survey_id, reports, enrolment_token=token)
    except Conflict:
        # Why: the storing transaction refuses a survey closed meanwhile with a plain
        # Conflict (checked there first); a device must learn it by the problem type.
        if not storage.get_survey(survey_id, count=False).is_open:
            raise SurveyClosed(f"survey {survey_id!r} is closed") from None
        raise
    return json_response({"survey": survey_id, "received": len(ids), "reports": ids}, 201)


@blueprint.post("/surveys/<survey_id>/reports/bulk")
def submit_bulk(survey_id: str) -> Response:
    """Operator only: many respondents' reports in one all-or-nothing batch.

    Order of refusals: operator token missing (401) or wrong (403), survey
    (404), body (400/413/415), closed (409), validation (422/413), report id
    reuse (409).  No enrolment token is needed or spent: the operator vouches
    for every report (a relay or an import of reports randomized on devices).
    """
    require_operator()
    storage = current_storage()
    with storage.bulk_turn():  # SQLite: one bulk request at a time per process
        record = storage.get_survey(survey_id, count=False)
        refuse_relayed(record)
        body = read_json()
        if not record.is_open:
            raise SurveyClosed(f"survey {survey_id!r} is closed")
        # Loose reports (the older form) are stored without a submission key.
        bulk = BulkBody.parse(body, record.survey, max_batch=current_app.config["MAX_BATCH"])
        owners = list(bulk.respondents)
        ids = storage.add_reports(survey_id, list(bulk.reports), operator=True, respondents=owners)
    answer = {"survey": survey_id, "received": len(ids), "reports": ids}
    if bulk.grouped:
        answer["respondents"] = len(set(owners))
    return json_response(answer, 201)


def _jsonl(reports: Iterator[StoredReport]) -> Iterator[str]:
    for report in reports:
        yield json.dumps(report.to_dict()) + "\n"


def _csv(reports: Iterator[StoredReport]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(EXPORT_COLUMNS)
    for report in reports:
        row = report.to_dict()
        writer.writerow([row[column] for column in EXPORT_COLUMNS])
        if buffer.tell() > 65_536:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


@blueprint.get("/surveys/<survey_id>/export")
def export(survey_id: str) -> Response:
    """Every stored raw report in append-only order, streamed."""
    require_operator()
    kind = choice_parameter("format", ("jsonl", "csv"), "jsonl")
    reports = current_storage().export_reports(survey_id)
    if kind == "csv":
        body, mimetype = _csv(reports), "text/csv"
    else:
        body, mimetype = _jsonl(reports), "application/jsonl"
    response = Response(stream_with_context(body), mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{survey_id}.{kind}"'
    return response
