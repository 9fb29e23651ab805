"""Signing in to the editor: an operator token once, then a session cookie; CSRF on every form.

Order of checks on every editor request, and why:

1. The session cookie (``deniable_editor``): HttpOnly (no script reads it), SameSite=Strict
   (no other site's page sends it), Secure when the aggregator is reached over TLS (its
   public URL is https), path ``/editor``.  Only its SHA-256 is stored; the session ends
   when it expires, when the operator signs out, and at once when the operator token it
   was opened with is revoked.  Only an unlimited operator token signs in: the editor
   creates surveys, which a token limited to some surveys may not.
2. A form post (every change is one) must come from this origin: a request whose
   ``Sec-Fetch-Site`` is another site's, or whose ``Origin`` is not this aggregator's, is
   refused before anything else is read.
3. It must carry the session's CSRF token (a hidden field of every form, compared in
   constant time): a missing or wrong one is refused (403), and nothing is changed.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from functools import wraps
from typing import Any

from flask import Response, g, redirect, render_template, request, url_for

from deniable.errors import DeniableError
from deniable.service.limits import Rate, current_limits

from ..public_url import public_base_url
from ..storage import current_storage
from .store import SESSION_SECONDS, EditorStore, Session

__all__ = ["COOKIE", "check_form", "editor_store", "operator_page", "register"]

COOKIE = "deniable_editor"
# Failed sign-in attempts per client address (an IPv6 /64), counted by the API's limiter and
# in its store; past them every attempt waits.  Why failures only, and loopback too: tokens
# are guessed by failing, while operators (and tests) sign in often; behind a proxy not
# configured with TRUST_PROXY every operator shares one count.
SIGN_IN_RATE = Rate(10, 60.0)


def editor_store() -> EditorStore:
    return EditorStore(current_storage().dialect)


def _cookie() -> str | None:
    value = request.cookies.get(COOKIE, "")
    return value if 0 < len(value) <= 200 else None


def current_session() -> Session | None:
    cookie = _cookie()
    return None if cookie is None else editor_store().find_session(cookie)


def _cross_site() -> bool:
    """True if the request comes from another site's page (the browser says so)."""
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site not in ("same-origin", "none"):
        return True
    origin = request.headers.get("Origin")
    return origin is not None and origin != public_base_url()


def refused(message: str, status: int = 403) -> tuple[str, int]:
    return render_template("editor/refused.html", message=message), status


def check_form(session: Session) -> tuple[str, int] | None:
    """The refusal of a form post that is cross-site or lacks the CSRF token (None if fine)."""
    if _cross_site():
        return refused(
            "This form was sent from another site. Nothing was changed. "
            "Open the editor on this aggregator and try again."
        )
    given = request.form.get("csrf", "")
    if not given or not secrets.compare_digest(given.encode(), session.csrf.encode()):
        return refused(
            "This form has expired or was not sent from the editor (its security token is "
            "missing or wrong). Nothing was changed. Reload the page and try again."
        )
    return None


def operator_page(view: Callable[..., Any]) -> Callable[..., Any]:
    """A page for signed-in operators: others go to sign in; form posts are checked."""

    @wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        session = current_session()
        if session is None:
            if request.method != "GET":
                return refused("You are not signed in (or your session ended). Sign in again.", 401)
            return redirect(url_for("editor.sign_in", next=request.full_path.rstrip("?")))
        if request.method != "GET" and (refusal := check_form(session)) is not None:
            return refusal
        g.editor_csrf = session.csrf
        return view(*args, **kwargs)

    return wrapped


def _safe_next(target: str | None) -> str:
    """Where to go after signing in: an editor page of this site only (no open redirect)."""
    if target and target.startswith("/editor/") and not target.startswith("//"):
        return target
    return url_for("editor.home")


def _sign_in_wait(*, failed: bool = False) -> float:
    """0.0 if another sign-in attempt is allowed by :data:`SIGN_IN_RATE`, else the seconds to
    wait.  Only failed attempts count (``failed``): an operator who signs in often is never
    locked out, a guesser is."""
    limits = current_limits()
    forwarded = request.headers.get("X-Forwarded-For") if limits.trust_proxy else None
    address = limits.client_address(request.remote_addr, forwarded)
    key = limits.limit_key(address)
    return limits.wait(SIGN_IN_RATE, "editor-sign-in", key, count=failed)


def register(blueprint: Any) -> None:
    """Add the sign-in and sign-out routes to the editor's blueprint."""

    @blueprint.get("/sign-in")
    def sign_in() -> str:
        return render_template("editor/sign_in.html", next=request.args.get("next", ""))

    @blueprint.post("/sign-in")
    def sign_in_post() -> Any:
        if _cross_site():
            return refused("This form was sent from another site. Sign in on this aggregator.")
        if (wait := _sign_in_wait()) > 0:
            seconds = math.ceil(wait)
            page = render_template(
                "editor/refused.html",
                heading="Too many sign-in attempts",
                message=(
                    f"Too many sign-in attempts from your network. Wait {seconds} second"
                    f"{'' if seconds == 1 else 's'} and try again."
                ),
            )
            return page, 429, {"Retry-After": str(seconds)}
        token = request.form.get("token", "").strip()
        found = None
        if token and len(token) <= 200:
            try:
                found = current_storage().find_operator_token(token)
            except DeniableError:
                found = None
        if found is None or found.surveys is not None:
            message = (
                "This operator token is limited to some surveys; the editor needs one for "
                "every survey (deniable-aggregator token create)."
                if found is not None
                else "That is not a valid operator token. Check it and try again."
            )
            page = render_template(
                "editor/sign_in.html", next=request.form.get("next", ""), error=message
            )
            _sign_in_wait(failed=True)
            return page, 401
        cookie = editor_store().create_session(found.id)
        response: Response = redirect(_safe_next(request.form.get("next")), 303)
        response.set_cookie(
            COOKIE,
            cookie,
            max_age=SESSION_SECONDS,
            path="/editor",
            httponly=True,
            secure=public_base_url().startswith("https://"),
            samesite="Strict",
        )
        return response

    @blueprint.post("/sign-out")
    @operator_page
    def sign_out() -> Response:
        cookie = _cookie()
        if cookie is not None:
            editor_store().end_session(cookie)
        response: Response = redirect(url_for("editor.sign_in"), 303)
        response.delete_cookie(COOKIE, path="/editor")
        return response
