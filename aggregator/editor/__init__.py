"""The survey editor: operators write a survey in the browser, preview it and publish it.

Pages under ``/editor`` (server-rendered; every change is a form post; the one script,
``static/question.js``, only shows and hides the question form's fields as its type
changes, and the form works without it):

* ``/editor/``: the drafts, a button for a new one, and the published surveys, each with
  "copy as new" (the next wave starts as a draft holding the published definition).
* ``/editor/drafts/<draft>``: the survey's fields, settings (results public or private,
  enrolment, relay) and questions (add, edit, move up and down, remove), what still
  stops publishing, the previews and "Publish".
* ``/editor/drafts/<draft>/questions/<n>``: one question with every member its type has,
  and the planner's advice beside its ε (:mod:`.advice`).
* ``/editor/drafts/<draft>/preview?lang=``: the respond page as respondents will see it
  (:mod:`.preview`).

A draft is saved on every post, valid or not, and validated by
:meth:`deniable.survey.Survey.from_dict` each time (the refusal is shown next to its
field).  Publishing calls what ``POST /api/v1/surveys`` and ``create-survey`` call
(:func:`..api.surveys.parse_create`, then ``Storage.create_survey``): the survey is then
signed on every request like any other, and immutable; the draft is gone.

Sign-in, the session cookie and CSRF: :mod:`.session`.  Register with :func:`init_app`.
"""

from __future__ import annotations

from flask import Blueprint, Flask, Response

__all__ = ["CONTENT_SECURITY_POLICY", "blueprint", "init_app"]

blueprint = Blueprint(
    "editor",
    __name__,
    url_prefix="/editor",
    template_folder="templates",
    static_folder="static",
)

# Why: the dashboard's policy (inline CSS only, nothing else loads), except that the
# editor's forms post to this origin and its own script files run (static/: the question
# form's fields follow its type; no inline script).  The preview sets the respond page's.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


@blueprint.after_request
def _headers(response: Response) -> Response:
    response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
    response.headers["X-Content-Type-Options"] = "nosniff"
    # Why same-origin, not no-referrer: under no-referrer a browser sends "Origin: null" with
    # every form post, which the cross-site check (session.py) cannot tell from another site.
    response.headers["Referrer-Policy"] = "same-origin"
    # Why: pages hold a CSRF token and drafts; no cache keeps them.
    response.headers["Cache-Control"] = "no-store"
    return response


from . import pages as _pages  # noqa: E402,F401 - their routes register on the blueprint
from . import preview as _preview  # noqa: E402,F401
from . import questions as _questions  # noqa: E402,F401
from .session import register as _register_session  # noqa: E402

_register_session(blueprint)


def init_app(app: Flask) -> None:
    """Register the editor's pages at ``/editor`` (once)."""
    if blueprint.name not in app.blueprints:
        app.register_blueprint(blueprint)
