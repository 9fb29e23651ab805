"""Surveys: list, create (operator), read the signed document, close (operator)."""

from __future__ import annotations

from collections.abc import Mapping

from flask import Blueprint, Response

from deniable.errors import InvalidSurvey
from deniable.service.problems import read_json
from deniable.survey import Survey

from ..storage import current_storage
from .common import (
    is_operator,
    json_response,
    page_parameters,
    require_operator,
    survey_document,
    survey_summary,
)

__all__ = ["blueprint", "parse_create", "verify_relay_noise"]

blueprint = Blueprint("surveys", __name__)

CREATE_FIELDS = frozenset({"definition", "results_public", "require_enrolment"})


def parse_create(body: object) -> tuple[Survey, bool, bool]:
    """``{"definition": ..., "results_public": bool, "require_enrolment": bool}``, strictly."""
    if not isinstance(body, Mapping):
        raise InvalidSurvey(f"body: must be an object, got {type(body).__name__}")
    extra = set(body) - CREATE_FIELDS
    if extra:
        raise InvalidSurvey(f"body: unknown field(s) {', '.join(sorted(extra))}")
    if "definition" not in body:
        raise InvalidSurvey("body: missing field definition")
    public = body.get("results_public", True)
    if not isinstance(public, bool):
        raise InvalidSurvey("body.results_public: must be true or false")
    enrolment = body.get("require_enrolment", False)
    if not isinstance(enrolment, bool):
        raise InvalidSurvey("body.require_enrolment: must be true or false")
    try:
        survey = Survey.from_dict(body["definition"])
    except InvalidSurvey:
        raise
    except (ValueError, TypeError, ArithmeticError) as error:
        # Why: a mechanism constructor may reject odd parameters with a plain
        # ValueError/TypeError; to the caller it is still an invalid survey.
        raise InvalidSurvey(f"survey: {str(error)[:300]}") from None
    verify_relay_noise(survey)
    return survey, public, enrolment


def verify_relay_noise(survey: Survey) -> None:
    """InvalidSurvey (422) unless the signed relay noise's law meets its signed (ε, δ)
    exactly (``deniable.survey_relay.RelayNoise.verify``): the parse checks its shape
    only, and the results would publish the signed ε."""
    relay = getattr(survey, "relay", None)
    if relay is not None and relay.noise is not None:
        relay.noise.verify()


@blueprint.get("/surveys")
def list_surveys() -> Response:
    """One page of surveys, oldest first; ``next`` is the following page's URL or null."""
    operator = is_operator()
    page, limit = page_parameters()
    # Why one extra: it tells whether a next page exists without counting every survey.
    records = current_storage().list_surveys(offset=(page - 1) * limit, limit=limit + 1)
    following = f"/api/v1/surveys?page={page + 1}&limit={limit}" if len(records) > limit else None
    return json_response(
        {
            "surveys": [survey_summary(record, operator=operator) for record in records[:limit]],
            "page": page,
            "limit": limit,
            "next": following,
        }
    )


@blueprint.post("/surveys")
def create_survey() -> Response:
    require_operator()
    survey, public, enrolment = parse_create(read_json())
    record = current_storage().create_survey(
        survey, results_public=public, require_enrolment=enrolment
    )
    response = json_response(survey_document(record), 201)
    response.headers["Location"] = f"/api/v1/surveys/{record.id}"
    return response


@blueprint.get("/surveys/<survey_id>")
def get_survey(survey_id: str) -> Response:
    return json_response(survey_document(current_storage().get_survey(survey_id, count=False)))


@blueprint.post("/surveys/<survey_id>/close")
def close_survey(survey_id: str) -> Response:
    require_operator()
    return json_response(survey_document(current_storage().close_survey(survey_id)))
