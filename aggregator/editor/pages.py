"""The editor's survey pages: the list, a draft, its settings, publishing, the next wave."""

from __future__ import annotations

from typing import Any

from flask import redirect, render_template, request, url_for
from markupsafe import escape

from deniable.errors import Conflict, DeniableError, NotFound
from deniable.survey import MAX_QUESTIONS, SHUFFLE_UNITS

from ..api.surveys import parse_create
from ..public_url import public_base_url
from ..respond.words import catalogue
from ..storage import current_storage
from . import blueprint
from .drafts import check_draft, condition_words, load_draft, missing, question_rows, wave_id
from .forms import (
    NOISE_FAMILIES,
    QUESTIONNAIRE,
    TYPE_WORDS,
    plain,
    question_types,
    settings_from_form,
)
from .session import editor_store, operator_page
from .store import new_draft_document

__all__ = ["draft_page"]

# The published surveys the list shows (newest last, as the dashboard lists them).
LISTED_SURVEYS = 200


@blueprint.get("/")
@operator_page
def home() -> str:
    drafts = [
        {
            "id": d.id,
            "title": d.definition.get("title") or "Untitled draft",
            "survey_id": d.definition.get("id") or "",
            "questions": len(d.definition.get("questions") or []),
        }
        for d in editor_store().list_drafts()
    ]
    surveys = current_storage().list_surveys(offset=0, limit=LISTED_SURVEYS)
    return render_template("editor/home.html", drafts=drafts, surveys=surveys)


@blueprint.post("/drafts")
@operator_page
def new_draft() -> Any:
    draft_id = editor_store().create_draft(new_draft_document())
    return redirect(url_for("editor.draft", draft_id=draft_id, new=1), 303)


def draft_page(draft_id: str, *, status: int = 200, saved: str = "") -> Any:
    draft = load_draft(draft_id)
    if draft is None:
        return missing()
    checked = check_draft(draft.definition)
    definition = draft.definition
    relay = definition.get("relay") if isinstance(definition.get("relay"), dict) else {}
    page = render_template(
        "editor/draft.html",
        draft=draft,
        definition=definition,
        relay=relay,
        checked=checked,
        # A draft just made lists what it still needs, but marks no field before a save.
        survey_problems={} if request.args.get("new") == "1" else checked.at(None),
        rows=question_rows(draft, checked),
        types=[(kind, TYPE_WORDS.get(kind, kind)) for kind in question_types()],
        shuffle_units=SHUFFLE_UNITS,
        noise_families=NOISE_FAMILIES,
        noise_mean=noise_mean(relay),
        languages=preview_languages(definition),
        full=len(definition.get("questions") or []) >= MAX_QUESTIONS,
        questionnaire=QUESTIONNAIRE,
        saved=saved,
    )
    return page, status


def preview_languages(definition: dict[str, Any]) -> list[tuple[str, str]]:
    """(code, name) of each language a preview can show: the survey's own, its translations,
    then the other languages of the respond page's words."""
    named = {lang: words["language"] for lang, words in catalogue().items()}
    translations = definition.get("translations")
    codes = [
        str(definition.get("language") or "en"),
        *sorted(translations if isinstance(translations, dict) else ()),
        *named,
    ]
    return [(code, named.get(code, f"Translation: {code}")) for code in dict.fromkeys(codes)]


def noise_mean(relay: dict[str, Any]) -> float | None:
    """The mean number of dummies per output value of the relay's noise law (None: none)."""
    from deniable.dummies import law_from_dict

    noise = relay.get("noise")
    try:
        return law_from_dict(noise["law"]).mean if isinstance(noise, dict) else None
    except (DeniableError, ValueError, TypeError, KeyError):
        return None


@blueprint.get("/drafts/<draft_id>")
@operator_page
def draft(draft_id: str) -> Any:
    return draft_page(draft_id, saved=request.args.get("saved", ""))


@blueprint.post("/drafts/<draft_id>/survey")
@operator_page
def save_survey(draft_id: str) -> Any:
    found = load_draft(draft_id)
    if found is None:
        return missing()
    editor_store().save_draft(draft_id, settings_from_form(request.form, found.document))
    # Saved whatever it holds: the page shows what still stops publishing.
    return redirect(url_for("editor.draft", draft_id=draft_id, saved="survey") + "#survey", 303)


@blueprint.post("/drafts/<draft_id>/publish")
@operator_page
def publish(draft_id: str) -> Any:
    found = load_draft(draft_id)
    if found is None:
        return missing()
    checked = check_draft(found.definition)
    if checked.survey is None:
        return draft_page(draft_id, status=422)
    body = {
        "definition": found.definition,
        "results_public": found.document.get("results_public", True),
        "require_enrolment": found.document.get("require_enrolment", False),
    }
    # What POST /api/v1/surveys does (and create-survey): parse, then store; the survey is
    # signed on every request from then on, and can no longer change.
    try:
        survey, public, enrolment = parse_create(body)
        record = current_storage().create_survey(
            survey, results_public=public, require_enrolment=enrolment
        )
    except Conflict:
        return _publish_refused(
            draft_id,
            f"A survey with the id “{found.definition.get('id')}” exists already: "
            "give this one another id (a new wave: the same id with -2, -3, …).",
        )
    except DeniableError as error:
        return _publish_refused(draft_id, plain(str(error)))
    editor_store().delete_draft(draft_id)
    return redirect(url_for("editor.published", survey_id=record.id, new=1), 303)


def _publish_refused(draft_id: str, message: str) -> Any:
    page, status = draft_page(draft_id, status=409)
    return page.replace("<!--publish-problem-->", _problem_html(message), 1), status


def _problem_html(message: str) -> str:
    return f'<p class="problem" id="publish-problem" role="alert">{escape(message)}</p>'


@blueprint.post("/drafts/<draft_id>/delete")
@operator_page
def delete_draft(draft_id: str) -> Any:
    if load_draft(draft_id) is None:
        return missing()
    editor_store().delete_draft(draft_id)
    return redirect(url_for("editor.home"), 303)


@blueprint.get("/surveys/<survey_id>")
@operator_page
def published(survey_id: str) -> Any:
    try:
        record = current_storage().get_survey(survey_id, count=False)
    except (NotFound, DeniableError):
        return missing("There is no published survey with this id.")
    raw = record.survey.to_dict().get("questions", [])
    titles = {q.get("id"): q.get("text") or q.get("id") for q in raw}
    details = [
        {
            "optional": bool(q.get("optional")),
            "help": q.get("help", ""),
            "condition": condition_words(q.get("show_if"), titles),
        }
        for q in raw
    ]
    return render_template(
        "editor/published.html",
        record=record,
        survey=record.survey,
        details=details,
        types=TYPE_WORDS,
        new=request.args.get("new") == "1",
        respond_url=public_base_url() + url_for("respond.respond", survey_id=record.id),
    )


@blueprint.post("/surveys/<survey_id>/copy")
@operator_page
def copy_survey(survey_id: str) -> Any:
    """ "Copy as new": the next wave as a draft, its id the next free ``-N``."""
    storage = current_storage()
    try:
        record = storage.get_survey(survey_id, count=False)
    except (NotFound, DeniableError):
        return missing("There is no published survey with this id.")
    drafted = {d.definition.get("id") for d in editor_store().list_drafts()}

    def taken(candidate: str) -> bool:
        if candidate in drafted:
            return True
        try:
            storage.get_survey(candidate, count=False)
        except NotFound:
            return False
        return True

    definition = record.survey.upgraded().to_dict()
    definition["id"] = wave_id(record.id, taken)
    document = {
        "definition": definition,
        "results_public": record.results_public,
        "require_enrolment": record.require_enrolment,
    }
    draft_id = editor_store().create_draft(document)
    return redirect(url_for("editor.draft", draft_id=draft_id), 303)
