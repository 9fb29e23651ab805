"""The component schemas of the OpenAPI document (:mod:`.openapi`), built from the
constants the handlers use: the identifier pattern, the survey formats and question types."""

from __future__ import annotations

from typing import Any

from deniable.survey import FORMATS, IDENTIFIER, QUESTION_TYPES

__all__ = ["ID_PATTERN", "PAYLOAD_PATTERN", "UUID_PATTERN", "ref", "schemas"]

UUID_PATTERN = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
ID_PATTERN = f"^{IDENTIFIER.pattern}$"
# Why: payloads are whole bytes in lowercase hex (docs/wire-format.md).
PAYLOAD_PATTERN = "^(?:[0-9a-f]{2})+$"


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def schemas(max_batch: int) -> dict[str, Any]:
    """Component schemas; ``max_batch`` is the configured batch limit."""
    nullable_time = {"type": ["string", "null"], "format": "date-time"}
    return {
        "Problem": {
            "type": "object",
            "required": ["type", "title", "status", "detail"],
            "properties": {
                "type": {"type": "string", "pattern": "^urn:deniable:problem:[a-z-]+$"},
                "title": {"type": "string"},
                "status": {"type": "integer", "minimum": 400, "maximum": 599},
                "detail": {"type": "string"},
            },
        },
        "Report": {
            "type": "object",
            "additionalProperties": False,
            "required": ["id", "question", "payload"],
            "properties": {
                "id": {"type": "string", "pattern": UUID_PATTERN},
                "question": {"type": "string", "pattern": ID_PATTERN},
                "payload": {"type": "string", "pattern": PAYLOAD_PATTERN, "maxLength": 4096},
            },
        },
        "Batch": {
            "type": "object",
            "additionalProperties": False,
            "required": ["reports"],
            "properties": {
                "reports": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": max_batch,
                    "items": ref("Report"),
                }
            },
        },
        "Submission": {"oneOf": [ref("Report"), ref("Batch")]},
        # The bulk route: respondents, or loose reports (stored without a submission).
        "Respondents": {
            "type": "object",
            "additionalProperties": False,
            "required": ["respondents"],
            "properties": {
                "respondents": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["reports"],
                        "properties": {
                            "reports": {"type": "array", "minItems": 1, "items": ref("Report")}
                        },
                    },
                }
            },
        },
        "BulkSubmission": {"oneOf": [ref("Respondents"), ref("Batch"), ref("Report")]},
        "Crosstab": {
            "type": "object",
            "required": ["survey", "rows", "columns", "epsilon", "beta", "kind", "n"],
            "properties": {
                "survey": {"type": "string"},
                "kind": {"enum": ["joint", "means", "empty"]},
                "nonresponse": {"enum": ["show", "hide"]},
                "share_of": {"enum": ["all", "answered"]},
                "n": {"type": "integer", "minimum": 0},
                "epsilon": {"type": "number"},
                "beta": {"type": "number"},
                "cells": {"type": "array", "items": {"type": "object"}},
                "categories": {"type": "array", "items": {"type": "object"}},
            },
        },
        "Comparison": {
            "type": "object",
            "required": ["first", "second", "beta", "comparisons"],
            "properties": {
                "beta": {"type": "number"},
                "dependence": {"enum": ["independent", "nonnegative", "any"]},
                "method": {"enum": ["union"]},
                "comparisons": {"type": ["array", "null"], "items": {"type": "object"}},
            },
        },
        "Acknowledgement": {
            "type": "object",
            "required": ["survey", "received", "reports"],
            "properties": {
                "survey": {"type": "string"},
                "received": {"type": "integer", "minimum": 1},
                "respondents": {"type": "integer", "minimum": 1},
                "reports": {"type": "array", "items": {"type": "string", "pattern": UUID_PATTERN}},
            },
        },
        "Question": {
            "type": "object",
            "required": ["id", "type", "text", "epsilon"],
            "properties": {
                "id": {"type": "string", "pattern": ID_PATTERN},
                "type": {"enum": list(QUESTION_TYPES)},
                "text": {"type": "string", "minLength": 1},
                "epsilon": {"type": "number", "exclusiveMinimum": 0},
                "mechanism": {"type": "string"},
                "options": {"type": "array", "items": {"type": "string"}},
                "lo": {"type": "number"},
                "hi": {"type": "number"},
                "parameters": {"type": "object"},
                "longitudinal": {"type": "object"},
                # deniable.survey/2 only (docs/protocol.md §5.5-5.6).
                "optional": {"type": "boolean"},
                "help": {"type": "string", "minLength": 1},
                "show_if": {"type": "object"},
                "points": {"enum": [5, 7, 11]},
                "anchors": {
                    "type": "object",
                    "required": ["low", "high"],
                    "properties": {"low": {"type": "string"}, "high": {"type": "string"}},
                },
            },
        },
        "SurveyDefinition": {
            "type": "object",
            "required": ["format", "id", "title", "questions"],
            "properties": {
                "format": {"enum": list(FORMATS)},
                "id": {"type": "string", "pattern": ID_PATTERN},
                "title": {"type": "string", "minLength": 1},
                "description": {"type": "string"},
                "questions": {"type": "array", "minItems": 1, "items": ref("Question")},
            },
        },
        "CreateSurvey": {
            "type": "object",
            "additionalProperties": False,
            "required": ["definition"],
            "properties": {
                "definition": ref("SurveyDefinition"),
                "results_public": {"type": "boolean", "default": True},
                "require_enrolment": {"type": "boolean", "default": False},
            },
        },
        "SurveyDocument": {
            "type": "object",
            "required": [
                "id",
                "status",
                "results_public",
                "require_enrolment",
                "created_at",
                "closed_at",
                "definition",
                "signature",
                "key_id",
            ],
            "properties": {
                "id": {"type": "string"},
                "status": {"enum": ["open", "closed"]},
                "results_public": {"type": "boolean"},
                "require_enrolment": {"type": "boolean"},
                "created_at": {"type": "string", "format": "date-time"},
                "closed_at": nullable_time,
                "definition": ref("SurveyDefinition"),
                "signature": {"type": "string"},
                "key_id": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
            },
        },
        "SurveySummary": {
            "type": "object",
            "required": [
                "id",
                "title",
                "status",
                "results_public",
                "require_enrolment",
                "total_epsilon",
                "n_reports",
                "created_at",
                "closed_at",
            ],
            "properties": {
                "id": {"type": "string"},
                "title": {"type": "string"},
                "status": {"enum": ["open", "closed"]},
                "results_public": {"type": "boolean"},
                "require_enrolment": {"type": "boolean"},
                "total_epsilon": {"type": "number"},
                "n_reports": {
                    "type": ["integer", "null"],
                    "minimum": 0,
                    "description": "null for a survey with private results, unless the request "
                    "carries an operator token; the real reports only (a relay's dummy reports "
                    "taken out), as the results count them",
                },
                "created_at": {"type": "string", "format": "date-time"},
                "closed_at": nullable_time,
            },
        },
        "Results": {
            "type": "object",
            "required": ["survey", "title", "status", "beta", "n_reports", "questions"],
            "properties": {
                "survey": {"type": "string"},
                "title": {"type": "string"},
                "status": {"enum": ["open", "closed"]},
                "beta": {"type": "number"},
                "n_reports": {"type": "integer", "minimum": 0},
                "questions": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["question", "type", "mechanism", "epsilon", "n"],
                        "properties": {
                            "intervals": {
                                "type": "array",
                                "description": "Every interval family: family, method, "
                                "guarantee, nominal_half_width (docs/api.md).",
                            },
                            "tightest": {
                                "enum": ["chebyshev", "chebyshev_exact", "bernstein", "exact_tail"]
                            },
                            "simultaneous_tightest": {
                                "enum": ["chebyshev", "chebyshev_exact", "bernstein", "exact_tail"]
                            },
                            "covers": {"enum": ["respondents"]},
                            "precision": {"enum": ["ok", "imprecise", "uninformative"]},
                            "uninformative": {"type": "boolean"},
                        },
                    },
                },
            },
        },
    }
