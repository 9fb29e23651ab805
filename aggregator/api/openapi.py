"""``GET /openapi.json``: the OpenAPI 3.1 document of the v1 API.

It is built from the same constants the handlers use (identifier pattern,
batch limit, problem types), so the contract and the behaviour cannot drift;
tests/aggregator/test_openapi.py runs schemathesis against it.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app

from deniable.estimation import DEFAULT_BETA
from deniable.service.problems import PROBLEM_MEDIA_TYPE

from .common import MAX_SURVEYS_PER_PAGE, SURVEYS_PER_PAGE, VERSION, json_response
from .openapi_schemas import ID_PATTERN, schemas
from .openapi_schemas import ref as _ref
from .results import BETAS

__all__ = ["blueprint"]

blueprint = Blueprint("openapi", __name__)


ERRORS: dict[int, str] = {
    400: "Body is not strict JSON, or a query parameter is invalid.",
    401: "Operator token missing; or enrolment token missing for a survey that requires one.",
    403: "Operator token invalid or revoked; or enrolment token forged, spent or for another "
    "survey.",
    404: "Unknown survey.",
    409: "Survey closed, survey id taken, or report id reused with another body.",
    413: "Body or batch over the configured limit.",
    415: "Body is not application/json.",
    422: "Strict validation of the survey or report failed.",
    429: "Too many submissions from this client address or with this enrolment token.",
    503: "Database unavailable; retry.",
}


RETRY_AFTER = {
    "description": "Whole seconds to wait before retrying (at least 1).",
    "required": True,
    "schema": {"type": "string", "pattern": "^[1-9][0-9]*$"},
}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def _operation(
    summary: str,
    responses: dict[int, dict[str, Any]],
    errors: tuple[int, ...],
    *,
    operator: bool = False,
    body: dict[str, Any] | None = None,
    parameters: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    operation: dict[str, Any] = {"summary": summary, "responses": {}}
    for status, response in responses.items():
        operation["responses"][str(status)] = response
    for status in errors:
        operation["responses"][str(status)] = {"$ref": f"#/components/responses/E{status}"}
    if operator:
        operation["security"] = [{"operator": []}]
    if body is not None:
        operation["requestBody"] = {"required": True, "content": _json(body)}
    if parameters:
        operation["parameters"] = parameters
    return operation


def _ok(description: str, schema: dict[str, Any], extra: dict[str, Any] | None = None):
    return {"description": description, "content": {**_json(schema), **(extra or {})}}


ENROLMENT = {
    "name": "X-Deniable-Enrolment",
    "in": "header",
    "required": False,
    "description": "One-time enrolment token; required by surveys with require_enrolment "
    "(missing: 401, forged or spent: 403), ignored by others. A token admits one batch; "
    "resending that same batch with it is acknowledged again.",
    "schema": {"type": "string", "pattern": "^dne_[A-Za-z0-9_-]{43}$"},
}

SURVEY_ID = {
    "name": "survey_id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": ID_PATTERN},
}


def document(max_batch: int) -> dict[str, Any]:
    """The whole OpenAPI 3.1 document."""
    operator_errors = (401, 403)
    body_errors = (400, 413, 415, 422)
    beta = {
        "name": "beta",
        "in": "query",
        "required": False,
        "description": "Allowed failure probability of each interval (every family): one of a "
        "fixed set (each distinct value costs a full computation; others are 400).",
        "schema": {"enum": list(BETAS), "default": DEFAULT_BETA},
    }
    paging = [
        {
            "name": "page",
            "in": "query",
            "required": False,
            "schema": {"type": "integer", "minimum": 1, "maximum": 1_000_000, "default": 1},
        },
        {
            "name": "limit",
            "in": "query",
            "required": False,
            "schema": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_SURVEYS_PER_PAGE,
                "default": SURVEYS_PER_PAGE,
            },
        },
    ]
    results_format = {
        "name": "format",
        "in": "query",
        "required": False,
        "schema": {"enum": ["json", "csv"]},
    }
    export_format = {
        "name": "format",
        "in": "query",
        "required": False,
        "schema": {"enum": ["jsonl", "csv"], "default": "jsonl"},
    }
    text = {"type": "string"}
    paths = {
        "/api/v1/health": {
            "get": _operation(
                "Liveness and storage backend",
                {
                    200: _ok(
                        "Healthy",
                        {
                            "type": "object",
                            "required": ["status", "storage", "version"],
                            "properties": {
                                "status": {"const": "ok"},
                                "storage": {"enum": ["sqlite", "postgresql"]},
                                "version": {"type": "string"},
                            },
                        },
                    )
                },
                (503,),
            )
        },
        "/api/v1/key": {
            "get": _operation(
                "The public key that signs survey definitions, and its rotation chain "
                "(docs/key-rotation.md)",
                {
                    200: _ok(
                        "The key",
                        {
                            "type": "object",
                            "required": ["algorithm", "public_key", "key_id", "sequence", "chain"],
                            "properties": {
                                "algorithm": {"const": "Ed25519"},
                                "public_key": {"type": "string"},
                                "key_id": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
                                "sequence": {"type": "integer", "minimum": 0},
                                "chain": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "required": [
                                            "sequence",
                                            "previous_key_id",
                                            "previous_public_key",
                                            "key_id",
                                            "public_key",
                                            "signature",
                                            "endorsement",
                                        ],
                                        "properties": {
                                            "sequence": {"type": "integer", "minimum": 1},
                                            "previous_key_id": {"type": "string"},
                                            "previous_public_key": {"type": "string"},
                                            "key_id": {"type": "string"},
                                            "public_key": {"type": "string"},
                                            "signature": {"type": "string"},
                                            "endorsement": {"type": "string"},
                                        },
                                    },
                                },
                                "encryption_key": {
                                    "description": "X25519 key for sealed reports, signed by "
                                    "the key above (docs/protocol.md, Sealing)",
                                    "type": "object",
                                    "required": [
                                        "algorithm",
                                        "suite",
                                        "public_key",
                                        "key_id",
                                        "signature",
                                    ],
                                    "properties": {
                                        "algorithm": {"const": "X25519"},
                                        "suite": {"type": "string"},
                                        "public_key": {"type": "string"},
                                        "key_id": {"type": "string"},
                                        "signature": {"type": "string"},
                                    },
                                },
                            },
                        },
                    )
                },
                (),
            )
        },
        "/api/v1/surveys": {
            "get": _operation(
                "One page of surveys, oldest first (private counts: operators only)",
                {
                    200: _ok(
                        "Surveys",
                        {
                            "type": "object",
                            "required": ["surveys", "page", "limit", "next"],
                            "properties": {
                                "surveys": {"type": "array", "items": _ref("SurveySummary")},
                                "page": {"type": "integer", "minimum": 1},
                                "limit": {"type": "integer", "minimum": 1},
                                "next": {
                                    "type": ["string", "null"],
                                    "description": "URL of the next page, or null",
                                },
                            },
                        },
                    )
                },
                (400, 403, 503),
                parameters=paging,
            ),
            "post": _operation(
                "Create a survey",
                {201: _ok("Created", _ref("SurveyDocument"))},
                (*body_errors, *operator_errors, 409, 503),
                operator=True,
                body=_ref("CreateSurvey"),
            ),
        },
        "/api/v1/surveys/{survey_id}": {
            "get": _operation(
                "The signed survey document",
                {200: _ok("The survey", _ref("SurveyDocument"))},
                (404, 503),
                parameters=[SURVEY_ID],
            )
        },
        "/api/v1/surveys/{survey_id}/close": {
            "post": _operation(
                "Close a survey (idempotent)",
                {200: _ok("Closed", _ref("SurveyDocument"))},
                (*operator_errors, 404, 503),
                operator=True,
                parameters=[SURVEY_ID],
            )
        },
        "/api/v1/surveys/{survey_id}/reports": {
            "post": _operation(
                "One respondent's answers: one report, or a batch with at most one report per "
                "question (idempotent, all-or-nothing)",
                {201: _ok("Stored", _ref("Acknowledgement"))},
                (*body_errors, 401, 403, 404, 409, 429, 503),
                body=_ref("Submission"),
                parameters=[SURVEY_ID, ENROLMENT],
            )
        },
        "/api/v1/surveys/{survey_id}/reports/bulk": {
            "post": _operation(
                "Many respondents' reports in one batch (operator only: relays, imports; no "
                "enrolment token needed or spent)",
                {201: _ok("Stored", _ref("Acknowledgement"))},
                (*body_errors, *operator_errors, 404, 409, 503),
                operator=True,
                body=_ref("BulkSubmission"),
                parameters=[SURVEY_ID],
            )
        },
        # A relayed survey's relay (docs/relay.md, protocol.md §11): its credential as bearer.
        "/api/v1/surveys/{survey_id}/batches/{batch_id}": {
            "put": _operation(
                "A relay's shuffled batch of sealed reports (relay credential; idempotent by "
                "batch id; blobs that do not open are dropped and counted)",
                {
                    200: _ok("Stored before: the first answer", {"type": "object"}),
                    201: _ok("Stored", {"type": "object"}),
                },
                (*body_errors, *operator_errors, 404, 409, 503),
                operator=True,
                body={
                    "type": "object",
                    "required": ["format", "unit", "sealed"],
                    "properties": {
                        "format": {"const": "deniable.batch/1"},
                        "unit": {"type": "string"},
                        # relay noise: how many of the sealed units are respondents' (the
                        # rest are the relay's dummy reports); only for a survey signing it
                        "real_units": {"type": "integer", "minimum": 0},
                        "sealed": {"type": "array", "items": {"type": "string"}},
                    },
                },
                parameters=[
                    SURVEY_ID,
                    {
                        "name": "batch_id",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{16,64}$"},
                    },
                ],
            )
        },
        "/api/v1/surveys/{survey_id}/enrolment-digests": {
            "get": _operation(
                "SHA-256 digests of the unspent enrolment tokens, for the survey's relay",
                {200: _ok("Digests", {"type": "object"})},
                (*operator_errors, 404, 409, 503),
                operator=True,
                parameters=[SURVEY_ID],
            )
        },
        "/api/v1/surveys/{survey_id}/results": {
            "get": _operation(
                "Estimates with every interval family (operator token if results are private)",
                {200: _ok("Results", _ref("Results"), {"text/csv": {"schema": text}})},
                (400, *operator_errors, 404, 503),
                parameters=[SURVEY_ID, beta, results_format],
            )
        },
        "/api/v1/surveys/{survey_id}/crosstab": {
            "get": _operation(
                "Crosstab of two questions: joint shares (with nonresponse=hide, shares among "
                "those who answered both), or a number's or a scale's mean by category, with "
                "its intervals (operator token if results are private)",
                {200: _ok("Crosstab", _ref("Crosstab"), {"text/csv": {"schema": text}})},
                (400, *operator_errors, 404, 409, 503),
                parameters=[
                    SURVEY_ID,
                    *[
                        {
                            "name": name,
                            "in": "query",
                            "required": name in ("rows", "columns"),
                            "schema": {"type": "string"},
                        }
                        for name in (
                            "rows",
                            "columns",
                            "first_row",
                            "first_column",
                            "second_row",
                            "second_column",
                        )
                    ],
                    {
                        "name": "nonresponse",
                        "in": "query",
                        "required": False,
                        "schema": {"enum": ["show", "hide"], "default": "show"},
                    },
                    beta,
                    results_format,
                ],
            )
        },
        "/api/v1/surveys/{survey_id}/compare": {
            "get": _operation(
                "Each estimate of a question in another survey (a later wave) minus this one's",
                {200: _ok("Comparison", _ref("Comparison"), {"text/csv": {"schema": text}})},
                (400, *operator_errors, 404, 503),
                parameters=[
                    SURVEY_ID,
                    *[
                        {
                            "name": name,
                            "in": "query",
                            "required": name != "with_question",
                            "schema": {"type": "string"},
                        }
                        for name in ("question", "with", "with_question")
                    ],
                    beta,
                    results_format,
                ],
            )
        },
        "/api/v1/surveys/{survey_id}/export": {
            "get": _operation(
                "Every stored raw report, in append-only order",
                {
                    200: {
                        "description": "Reports",
                        "content": {
                            "application/jsonl": {"schema": text},
                            "text/csv": {"schema": text},
                        },
                    }
                },
                (400, *operator_errors, 404, 503),
                operator=True,
                parameters=[SURVEY_ID, export_format],
            )
        },
        "/api/v1/openapi.json": {
            "get": _operation("This document", {200: _ok("OpenAPI 3.1", {"type": "object"})}, ())
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Deniable aggregator",
            "version": VERSION,
            "description": "Local differential privacy surveys (docs/api.md).",
        },
        "paths": paths,
        "components": {
            "schemas": schemas(max_batch),
            "securitySchemes": {"operator": {"type": "http", "scheme": "bearer"}},
            "responses": {
                f"E{status}": {
                    "description": description,
                    "content": {PROBLEM_MEDIA_TYPE: {"schema": _ref("Problem")}},
                    **({"headers": {"Retry-After": RETRY_AFTER}} if status == 429 else {}),
                }
                for status, description in ERRORS.items()
            },
        },
    }


@blueprint.get("/openapi.json")
def openapi() -> Response:
    return json_response(document(current_app.config["MAX_BATCH"]))
