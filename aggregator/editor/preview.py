"""The live preview: the respond page, as respondents will see it, of a draft, per language.

The preview runs the real page: the respond page's template, modules and policy
(:mod:`..respond`), with the browser client fetching and verifying a signed survey like
any respondent's.  Only three things differ, and why:

* The survey it fetches is the draft's, served under ``/editor/preview/<draft>.<secret>``
  (the client sends no cookie, so the secret in the path, which only the preview page
  holds, is its access), and signed by the draft's own preview key, never the
  aggregator's: no respondent's device, pinning the aggregator's key, could take a
  preview for a survey.
* A relayed draft is previewed without its relay member (its page shows the relay
  passage all the same): the preview has no relay to seal to.
* Nothing is sent from a preview, and the operator's device is charged nothing: the page
  carries ``data-deniable-preview``, on which the browser client keeps its ledger in
  memory only and, at "Send", says that this is a preview and nothing was sent.  Its
  report route refuses (403) all the same, should anything ever be posted to it.
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from flask import Response, redirect, render_template, request, url_for
from markupsafe import escape

from deniable.errors import Forbidden, NotFound
from deniable.survey import Survey
from deniable.wire import SurveyEnvelope

from ..api.common import json_response
from ..respond import _headers, render_respond_page, watch_script
from ..respond.words import chosen_language, translator
from ..signing import SigningKey
from . import blueprint
from .drafts import load_draft, missing, stand_in
from .forms import validate
from .session import operator_page
from .store import Draft

__all__ = ["preview_key", "preview_survey"]

AGGREGATOR_ATTRIBUTE = 'data-deniable-aggregator=""'


def preview_key(draft: Draft) -> SigningKey:
    """The draft's own signing key (from its stored seed): it signs its previews only."""
    return SigningKey(
        private_key=Ed25519PrivateKey.from_private_bytes(draft.preview_seed),
        path=Path("preview"),
    )


def preview_survey(draft: Draft) -> tuple[Survey | None, Survey | None]:
    """(the survey as respondents will see it, the one the preview signs) or (None, None)."""
    survey, _ = validate(stand_in(draft.definition))
    if survey is None:
        return None, None
    return survey, replace(survey, relay=None)


def _base(draft: Draft) -> str:
    return url_for("editor.preview_root", capability=f"{draft.id}.{draft.preview_token}")


@blueprint.get("/drafts/<draft_id>/preview")
@operator_page
def preview(draft_id: str) -> Any:
    draft = load_draft(draft_id)
    if draft is None:
        return missing()
    shown, signed = preview_survey(draft)
    if shown is None or signed is None:
        message = "This draft cannot be previewed yet: fix the problems shown on its page first."
        return render_template("editor/refused.html", message=message, back=draft.id), 409
    # ?lang= picks the page's words and, if the survey has it, its text (as for respondents).
    lang = chosen_language(shown.language)
    t = translator(lang)
    page, imports = render_respond_page(
        signed,
        shown=shown,
        t=t,
        lang=lang,
        is_open=True,
        public_key=preview_key(draft).public_key,
        results="",
    )
    if AGGREGATOR_ATTRIBUTE not in page:  # the respond page changed: say so, never guess
        raise RuntimeError("respond.html no longer sets data-deniable-aggregator")
    # data-deniable-preview: respond.js charges a throw-away ledger and sends nothing.
    page = page.replace(
        AGGREGATOR_ATTRIBUTE,
        f'data-deniable-aggregator="{_base(draft)}" data-deniable-preview=""',
        1,
    )
    back = url_for("editor.draft", draft_id=draft.id)
    banner = (
        f'<main>\n<p class="deniable-intro"><strong>{escape(t("preview_banner"))}</strong> '
        f'<a href="{back}">{escape(t("preview_back"))}</a></p>'
    )
    page = page.replace("<main>", banner, 1)
    return page, 200, _headers((imports, watch_script()))


def _capability(capability: str) -> Draft:
    draft_id, _, token = capability.partition(".")
    draft = load_draft(draft_id)
    if draft is None or not secrets.compare_digest(token.encode(), draft.preview_token.encode()):
        raise NotFound("no such preview")
    return draft


@blueprint.get("/preview/<capability>")
def preview_root(capability: str) -> Response:
    """The preview's stand-in for an aggregator's base URL (the client appends its paths)."""
    raise NotFound("no such page")


@blueprint.get("/preview/<capability>/api/v1/surveys/<survey_id>")
def preview_document(capability: str, survey_id: str) -> Response:
    """The draft as a signed survey document (signed by its preview key)."""
    draft = _capability(capability)
    _, signed = preview_survey(draft)
    if signed is None or signed.id != survey_id:
        raise NotFound(f"no survey {survey_id[:80]!r} in this preview")
    key = preview_key(draft)
    created = datetime.fromtimestamp(draft.updated_at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    document = SurveyEnvelope(
        id=signed.id,
        status="open",
        results_public=False,
        require_enrolment=bool(draft.document.get("require_enrolment")),
        created_at=created,
        closed_at=None,
        definition=signed.to_dict(),
        signature=key.sign(signed.canonical_bytes()),
        key_id=key.key_id,
    ).to_dict()
    response = json_response(document)
    response.headers["Cache-Control"] = "no-store"
    return response


@blueprint.post("/preview/<capability>/api/v1/surveys/<survey_id>/reports")
def preview_reports(capability: str, survey_id: str) -> Response:
    _capability(capability)
    raise Forbidden("this is a preview of a draft: nothing sent from it is stored")


@blueprint.get("/preview/<capability>/about/epsilon")
def preview_epsilon(capability: str) -> Response:
    """The form's link to the page on ε (the client writes it under its aggregator's URL)."""
    return redirect(url_for("respond.about_epsilon", **request.args), 303)
