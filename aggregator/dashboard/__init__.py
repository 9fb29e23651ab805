"""The dashboard: server-rendered HTML pages of published results, no JavaScript.

``/`` lists the surveys; ``/surveys/<id>`` shows, per question, a bar chart (a
scale's columns in order, or the mean) as inline SVG with the tightest per-category
interval as whiskers (named), n, ε and the mechanism, and words when there are too few
respondents; an optional or conditional question's declined and applied shares, and a
scale's mean and net promoter score, in words beside it (:mod:`.present`).  All of it is
computed by the same function as ``GET /api/v1/surveys/{id}/results``
so the page and the API cannot disagree.  Surveys whose results are private show
a notice instead of numbers.  Register with :func:`init_app`.
"""

from __future__ import annotations

import zlib
from typing import Any

from flask import Blueprint, Flask, Response, render_template, request, url_for
from markupsafe import Markup

from deniable.errors import InvalidParameter, NotFound

from ..api import relayed
from ..api.common import check_survey_id, page_parameters, survey_summary
from ..api.results import results_by_question, results_cache, statistics_key, unpacked
from ..crosstabs import unavailable_reason
from ..public_url import public_base_url, respond_links
from ..relay_noise import real_counts
from ..storage import SurveyRecord, current_storage
from ..storage.records import respondents
from . import relay_held
from .present import explanation, question_view
from .times import time_element

__all__ = ["blueprint", "init_app"]

blueprint = Blueprint("dashboard", __name__, template_folder="templates")

# Why: pages embed only inline CSS and SVG; nothing else may load or run.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def _beta() -> float:
    from ..api.results import parse_beta

    return parse_beta()


@blueprint.after_request
def _headers(response: Response) -> Response:
    if response.mimetype in ("text/html", "image/svg+xml"):
        response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
    return response


@blueprint.get("/")
def index() -> str | tuple[str, int]:
    """One page of surveys (the dashboard has no operator: private counts stay hidden)."""
    try:
        page, limit = page_parameters()
    except InvalidParameter as error:
        return render_template("missing.html", survey_id="", error=str(error)), 400
    storage = current_storage()
    records = storage.list_surveys(offset=(page - 1) * limit, limit=limit + 1)
    surveys = []
    for record in records[:limit]:
        summary = survey_summary(record)
        # Reports summed over questions count each respondent once per question; a
        # private survey's count stays hidden (it would time each submission).
        summary["respondents"] = None
        if record.results_public:  # the real respondents, as the results publish them
            counts = real_counts(record, storage.fold(record.id), relayed.batch_summary(record))
            summary["respondents"] = max(counts.values(), default=0)
        summary["links"] = respond_links(record, public_base_url())
        summary["text_lang"] = text_lang(record)
        surveys.append(summary)
    shown = request.args.get("limit")  # kept in the links when given (url_for drops None)
    return render_template(
        "index.html",
        surveys=surveys,
        page=page,
        previous_url=url_for("dashboard.index", page=page - 1, limit=shown) if page > 1 else None,
        next_url=(
            url_for("dashboard.index", page=page + 1, limit=shown) if len(records) > limit else None
        ),
    )


@blueprint.get("/surveys/<survey_id>")
def survey(survey_id: str) -> str | tuple[str, int]:
    try:
        check_survey_id(None, {"survey_id": survey_id})
        record = current_storage().get_survey(survey_id, count=False)
    except NotFound:
        return render_template("missing.html", survey_id=survey_id), 404
    try:
        beta = _beta()
    except InvalidParameter as error:
        return render_template("missing.html", survey_id=survey_id, error=str(error)), 400
    # Why cached: the page of the largest survey parses ~46 MB of results; the page
    # itself (~1 MB) is kept, compressed, beside the results it shows.
    key = None
    if record.results_public:
        # Why the comparable surveys in the key: a later wave adds a link to the page.
        later = ",".join(other.id for other in _crosstab.comparable_surveys(record))
        # Why the base URL: the page shows the respondents' link of an open survey.
        shown = f"page:{'beta' in request.args}:{later}:{public_base_url()}"
        shown += relay_held.cache_key(record)  # the relay's held count, as of its snapshot
        key = statistics_key(record, beta, shown)[0]
        cached = results_cache().get(key)
        if cached is not None:
            return b"".join(unpacked(cached)).decode("utf-8")
    page = _survey_page(record, beta)
    if key is not None:
        results_cache().put(key, (zlib.compress(page.encode("utf-8"), 1),))
    return page


def _survey_page(record: SurveyRecord, beta: float) -> str:
    summary = survey_summary(record)
    summary["description"] = record.survey.description
    summary["text_lang"] = text_lang(record)
    questions = []
    summary["respondents"] = None  # private: hidden like the report count
    if record.results_public:
        summary["respondents"] = respondents(current_storage().fold(record.id))
        header, results = results_by_question(record, beta)
        if header.get("relay", {}).get("dummies"):  # relay noise: the real respondents only
            summary["respondents"] = header["relay"]["respondents"]
        summary["n_reports"] = header["n_reports"]
        summary["relay"] = header.get("relay")  # a relayed survey's batches (api/relayed.py)
        definitions = {q.id: q.to_dict() for q in record.survey.questions}
        questions = [question_view(definitions[r["question"]], r) for r in results]
    extra = {"beta": beta} if "beta" in request.args else {}
    return render_template(
        "survey.html",
        survey=summary,
        questions=questions,
        beta=beta,
        results_url=url_for("results.results", survey_id=record.id, **extra),
        csv_url=url_for("results.results", survey_id=record.id, format="csv", **extra),
        survey_url=url_for("surveys.get_survey", survey_id=record.id),
        comparable=_crosstab.comparable_surveys(record),
        links=respond_links(record, public_base_url()),
        share=share_view(record),
        explanation=explanation(beta, any(q["among"] for q in questions)),
        crosstabs_unavailable=(
            unavailable_reason(current_storage(), record) if record.results_public else None
        ),
    )


@blueprint.get("/surveys/<survey_id>/qr.svg")
def qr_code(survey_id: str) -> Response | tuple[str, int]:
    """The QR code of the survey's link for respondents (SVG, for printed notices)."""
    from ..qr import qr_svg

    try:
        check_survey_id(None, {"survey_id": survey_id})
        record = current_storage().get_survey(survey_id, count=False)
    except NotFound:
        return render_template("missing.html", survey_id=survey_id), 404
    links = respond_links(record, public_base_url())
    if links is None:
        return render_template(
            "missing.html", survey_id=survey_id, error="This survey takes no answers."
        ), 404
    response = Response(qr_svg(links.respond), mimetype="image/svg+xml")
    response.headers["Content-Disposition"] = f'inline; filename="{record.id}-qr.svg"'
    return response


def text_lang(record: SurveyRecord) -> str | None:
    """The language of the survey's own text when it is not the pages' (English): its title,
    description and questions are then marked with it (WCAG 2.2, 3.1.2 language of parts)."""
    language = getattr(record.survey, "language", "en")
    return None if language == "en" else language


def share_view(record: SurveyRecord) -> dict[str, Any] | None:
    """The share card's QR code (inline SVG) and its download URL, for a survey that
    browsers can answer."""
    from ..qr import qr_inline

    links = respond_links(record, public_base_url())
    if links is None:
        return None
    label = f"QR code of the link for respondents, {links.respond}"
    return {
        "qr": Markup(qr_inline(links.respond, label)),
        "qr_url": url_for("dashboard.qr_code", survey_id=record.id),
        "held": relay_held.held_view(record),  # answers the relay holds (None: not shown)
    }


from . import crosstab as _crosstab  # noqa: E402,F401 - its pages register on the blueprint


@blueprint.app_template_filter("when")
def _when(value: str | None) -> Any:
    return time_element(value)


def init_app(app: Flask) -> None:
    """Register the dashboard's pages at ``/`` and ``/surveys/<id>`` (once)."""
    if blueprint.name not in app.blueprints:
        app.register_blueprint(blueprint)
