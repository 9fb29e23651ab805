"""The respond page and the browser client's files: answers randomized in the browser.

``GET /surveys/<id>/respond`` is an HTML form for one survey.  Order of operations,
and why:

1. The page carries the survey id and the aggregator's public key (the pin) in data
   attributes, and loads ``respond.js`` with a Subresource Integrity hash (every module
   it imports is preloaded with its own hash), under a CSP that allows scripts from this
   origin only: no ``eval``, and no inline script but the import map and watch.js (which
   says so when the modules fail to load: inline, so it cannot fail to load itself),
   each allowed by its hash. The client loads only the mechanism modules its survey uses
   (``survey_modules``): the page preloads exactly those, with their hashes, so what it
   fetches depends on the survey alone and every module it runs is pinned.
   ``keychain.js`` (key rotation) is imported only when the survey names a key other
   than the pinned one, which the page (pinning the current key) meets only if the key
   rotates meanwhile: the page does not preload it but pins it in its import map's
   ``integrity`` (browsers that implement import-map integrity check it). The embed
   snippet, whose pasted key ages, preloads it.
2. The script fetches the signed survey, verifies the Ed25519 signature over the
   RFC 8785 bytes with WebCrypto, validates it, renders the form, randomizes the
   answers in the page with ``crypto.getRandomValues``, shows the noisy values
   and the ε spent, and posts only those after the respondent clicks "Send".
3. Without JavaScript the page says that JavaScript is required.  The form has no
   action and the CSP sets ``form-action 'none'``: nothing is ever posted, and
   never a true answer.

``GET /surveys/<id>/embed`` prints the snippet another site pastes (the pinned key
and the SRI hash of every module).  ``GET /static/deniable/<file>`` serves the
browser client (client/browser/, package data of ``deniable.client``) with an ETag and
``Access-Control-Allow-Origin: *``: the files are public code, and other sites
embedding the form load them as cross-origin module scripts (docs/embedding.md).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Callable
from functools import cache
from importlib import resources

from flask import Blueprint, Flask, Response, abort, render_template, request, url_for

from deniable.errors import Conflict, NotFound
from deniable.mechanisms import CLASSES, mechanism_class
from deniable.survey import FORMAT, IDENTIFIER, Question, Survey
from deniable.translations import survey_words

from ..public_url import public_base_url
from ..signing import current_key
from ..storage import current_storage
from .words import chosen_language, translator, wanted_languages

__all__ = [
    "CORE",
    "FORM",
    "MODULES",
    "PAGE_FILES",
    "ROTATION",
    "SEALING",
    "STYLE",
    "blueprint",
    "init_app",
    "integrity",
    "render_respond_page",
    "static_file",
    "survey_modules",
]

blueprint = Blueprint("respond", __name__, template_folder="templates")

# The client library every page loads: respond.js imports deniable.js, which imports these.
CORE = ("randomness.js", "jcs.js", "conditions.js", "survey.js", "signatures.js", "deniable.js")
# The form: its words (one catalogue, also read by the aggregator: words.py), then the form.
FORM = ("messages.js", "respond_fields.js", "respond.js")
# Key rotation, imported by deniable.js only when a survey names another key (or on trust on
# first use; it imports signatures.js).
ROTATION = ("keychain.js",)
# The mechanism modules survey.js may import (its ORACLES table), each class's own with what it
# imports (mechanism.js, the shared base, always): from the mechanism registry.
MECHANISM_MODULES = tuple(dict.fromkeys(name for cls in CLASSES for name in cls.browser_files()))
# A relayed survey's path (sealed.js: its relay member, encryption key and sealed body) and the
# sealing it imports (HPKE to the aggregator's encryption key): imported only for a relayed survey.
SEALING = ("sealed.js", "sealing.js")
# Every module of the browser client (respond.js last); wire.js (decoding) no page loads.
MODULES = (
    *CORE,
    *ROTATION,
    *SEALING,
    *MECHANISM_MODULES,
    "wire.js",
    *FORM,
)
# watch.js (a classic script: says so when the modules fail to load) and the form's style.
# The respond page carries watch.js inline (allowed by its hash): a watcher that must be
# fetched can fail to load too, and with respond.js failing as well "Loading…" would stay.
PAGE_FILES = ("watch.js", "respond.css")
STATIC_FILES = frozenset(MODULES) | set(PAGE_FILES) | {"deniable.d.ts", "package.json"}

# The page around the form (the form's own style: respond.css, shared with embeds).
STYLE = " ".join(
    """
    body{margin:0;font:16px/1.5 system-ui,sans-serif;color:#1f2328;background:#f6f8fa}
    main{max-width:720px;margin:0 auto;padding:16px 20px 40px} h1{font-size:1.6em;line-height:1.25}
    a{color:#0a58ca} .deniable-error{color:#a40e26;font-weight:600}
    """.split()
)
# Without JavaScript, the "Loading…" line would stay: the page's <noscript> hides it.
NOSCRIPT_STYLE = "[data-deniable-loading]{display:none}"


def _sri(data: bytes) -> str:
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode("ascii")


@cache
def static_file(name: str) -> bytes:
    """A file of the browser client, from the installed package (cached: files never change)."""
    return resources.files("deniable.client").joinpath("browser", name).read_bytes()


def _mechanism_files(question: Question) -> tuple[str, ...]:
    """The browser modules the question's mechanism class runs on (its twin and imports)."""
    longitudinal = question.longitudinal is not None
    cls = mechanism_class(question.type, question.mechanism, longitudinal=longitudinal)
    return cls.browser_files() if cls is not None else ()


def survey_modules(survey: Survey, *, rotation: bool = False) -> tuple[str, ...]:
    """What a page for ``survey`` loads: the core, its mechanisms' modules, respond.js last.

    ``rotation``: also keychain.js, for a page whose pinned key may have been rotated since
    (the embed snippet keeps the key it was pasted with).
    """
    needed = {name for q in survey.questions for name in _mechanism_files(q)}
    needed |= {*CORE, *FORM, *(ROTATION if rotation else ())}
    if survey.relay is not None:  # reports are sealed in the page (docs/protocol.md §10)
        needed |= set(SEALING)
    return tuple(name for name in MODULES if name in needed)


@cache
def integrity() -> dict[str, str]:
    """Subresource Integrity hash of every module and page file a page loads."""
    return {name: _sri(static_file(name)) for name in (*MODULES, *PAGE_FILES)}


@cache
def watch_script() -> str:
    """watch.js as the text of an inline script (it holds no "</", so it cannot end one early)."""
    text = static_file("watch.js").decode("utf-8")
    if "</" in text or "<!--" in text:
        raise ValueError("watch.js cannot be inlined in a <script> element")
    return text


def _sha256(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode("ascii")


def import_map(base: str = "") -> str:
    """An import map whose ``integrity`` pins every module of the client (URLs under ``base``).

    Why every module, preloaded or not: when a preload's first fetch fails (a 503, a dropped
    connection), Chromium fetches the module again for the module graph, and that fetch
    carries only the integrity the import map gives; without it a modified module would run.
    """
    hashes = integrity()
    pinned = {base + url_for("respond.static", name=name): hashes[name] for name in MODULES}
    return json.dumps({"integrity": pinned}, separators=(",", ":"))


def relay_source(survey: Survey) -> str | None:
    """The connect-src source of a relayed survey's relay (its signed ``relay.url``, parsed by
    :mod:`deniable.origins` as the survey was validated): its serialized origin, or its scheme
    for an IPv6 host, which no CSP host source can name (``Origin.csp_source``)."""
    return None if survey.relay is None else survey.relay.origin.csp_source


# What a relayed survey's page tells the respondent, per shuffle unit (docs/relay.md).
RELAY_WORDS = {"question": "relay_question", "submission": "relay_submission"}


def relay_passage(survey: Survey, t: Callable[..., str]) -> str:
    """For a relayed survey, what the relay adds, in plain words: its host name (from the
    signed, parsed ``relay.url``; the port is no help to a reader) and ``min_batch``
    written with the language's thousands separator, and for a survey whose relay adds
    dummy reports (``relay.noise``) one sentence saying so and on what condition it helps.
    Empty for a direct survey."""
    if survey.relay is None:
        return ""
    if survey.relay.min_batch < 2:  # batches of one mix nobody: claim only what holds
        passage = t("relay_unbatched", relay=survey.relay.origin.host)
    else:
        min_batch = f"{survey.relay.min_batch:,}".replace(",", t("thousands_separator"))
        passage = t(
            RELAY_WORDS[survey.relay.shuffle_unit],
            relay=survey.relay.origin.host,
            min_batch=min_batch,
        )
    if survey.relay.noise is not None:  # the relay adds dummy reports (docs/relay.md)
        passage += " " + t("relay_noise")
    return passage


def content_security_policy(
    inline_script: str | tuple[str, ...] | None = None, relay: str | None = None
) -> str:
    # Why: scripts only from this origin and only with the SRI hashes in the page (the inline
    # scripts, the import map and watch.js, by their hashes); the page talks only to this
    # origin, and for a relayed survey to its signed relay; no form ever posts (the no-JS
    # page must send nothing).
    inline = (inline_script,) if isinstance(inline_script, str) else inline_script or ()
    script = "".join(f" 'sha256-{_sha256(text)}'" for text in inline)
    connect = f" {relay}" if relay else ""
    return (
        f"default-src 'none'; script-src 'self'{script}; connect-src 'self'{connect}; "
        f"style-src 'self' 'sha256-{_sha256(STYLE)}' 'sha256-{_sha256(NOSCRIPT_STYLE)}'; "
        "img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )


@blueprint.get("/static/deniable/<name>")
def static(name: str) -> Response:
    if name not in STATIC_FILES:
        abort(404)
    mimetype = "text/javascript" if name.endswith(".js") else "application/json"
    if name.endswith(".d.ts"):
        mimetype = "text/plain"
    elif name.endswith(".css"):
        mimetype = "text/css"
    data = static_file(name)
    response = Response(data, mimetype=mimetype)
    # Why: pages pin each file by its SRI hash; revalidating (ETag) instead of caching for a
    # while means an upgraded aggregator never serves a page whose hashes the cache breaks.
    response.headers["Cache-Control"] = "no-cache"
    response.set_etag(hashlib.sha256(data).hexdigest())
    response.make_conditional(request)
    response.headers["Access-Control-Allow-Origin"] = "*"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


@blueprint.get("/surveys/<survey_id>/respond")
def respond(survey_id: str) -> tuple[str, int, dict[str, str]]:
    try:
        record = current_storage().get_survey(survey_id, count=False)
    except NotFound:
        lang = chosen_language()
        t = translator(lang)
        return _unavailable(lang, t("not_found_heading"), t("not_found"), 404)
    lang = chosen_language(record.survey.language)
    t = translator(lang)
    if record.survey.format != FORMAT:
        return _unavailable(lang, t("legacy_heading"), t("legacy"), 409)
    page, imports = render_respond_page(
        record.survey,
        t=t,
        lang=lang,
        is_open=record.is_open,
        public_key=current_key().public_key,
        results=url_for("dashboard.survey", survey_id=record.id) if record.results_public else "",
    )
    return page, 200, _headers((imports, watch_script()), relay_source(record.survey))


def render_respond_page(
    survey: Survey,
    *,
    t: Callable[..., str],
    lang: str,
    is_open: bool,
    public_key: str,
    results: str,
    shown: Survey | None = None,
) -> tuple[str, str]:
    """The respond page's HTML for the signed ``survey`` (its mechanisms' modules pinned and
    preloaded), showing ``shown``'s title and relay passage (default: ``survey``'s), and the
    import map the page's CSP must allow.  The survey's own text is in the language the
    request asks for if the survey has it, else in the survey's; marked with its ``lang``
    where that is not the page's (WCAG 3.1.2)."""
    shown = survey if shown is None else shown
    text_lang, words = survey_words(shown, wanted_languages())
    hashes = integrity()
    names = survey_modules(survey)
    modules = [(url_for("respond.static", name=n), hashes[n]) for n in names]
    imports = import_map()
    page = render_template(
        "respond.html",
        t=t,
        lang=lang,
        import_map=imports,
        survey_id=survey.id,
        title=words.title,
        text_lang=text_lang,
        relay=relay_passage(shown, t),
        is_open=is_open,
        public_key=public_key,
        results=results,
        files={name: (url_for("respond.static", name=name), hashes[name]) for name in PAGE_FILES},
        watch=watch_script(),
        preload=modules[:-1],
        script=modules[-1],
        pinned=" ".join((*names, *ROTATION)),
        style=STYLE,
        noscript_style=NOSCRIPT_STYLE,
    )
    return page, imports


@blueprint.get("/about/epsilon")
def about_epsilon() -> tuple[str, int, dict[str, str]]:
    """A short page on what ε means, in the respondent's language (linked from the form)."""
    lang = chosen_language()
    # ?survey= (the form that linked here): a way back to it; an id no survey can have, none.
    asked = request.args.get("survey", "")
    back = (
        url_for("respond.respond", survey_id=asked, lang=lang)
        if IDENTIFIER.fullmatch(asked)
        else None
    )
    page = render_template("epsilon.html", t=translator(lang), lang=lang, style=STYLE, back=back)
    response_headers = _headers()
    response_headers["Cache-Control"] = "public, max-age=3600"
    return page, 200, response_headers


@blueprint.get("/surveys/<survey_id>/embed")
def embed(survey_id: str) -> Response:
    """The embed snippet for another site: the pinned key and every file's SRI hash.

    ``?lang=`` sets the form's language (default: the Accept-Language of this request).
    """
    record = current_storage().get_survey(survey_id, count=False)
    if record.survey.format != FORMAT:
        raise Conflict(_legacy(record.id))
    lang = chosen_language(record.survey.language)
    t = translator(lang)
    base = public_base_url()  # PUBLIC_URL, never a Host header alone (public_url.py)
    hashes = integrity()
    url = lambda name: html.escape(base + url_for("respond.static", name=name))  # noqa: E731
    names = survey_modules(record.survey, rotation=True)
    results = url_for("dashboard.survey", survey_id=record.id) if record.results_public else ""
    imports = html.escape(import_map(base), quote=False)
    relay = f" {origin}" if (origin := relay_source(record.survey)) else ""  # relayed: sealed there
    lines = [
        f"<!-- Deniable: the form of survey {html.escape(record.id)}; answers are randomized in the"
        " browser. Keep these lines together: they pin every file the form runs.",
        f"     A Content-Security-Policy of the host page needs: script-src {base}"
        f" 'sha256-{_sha256(imports)}'; style-src {base}; connect-src {base}{relay}",
        "     The aggregator answers the host page only if the host's origin is in its"
        " DENIABLE_CORS_ORIGINS setting (docs/embedding.md). -->",
        f'<script type="importmap">{imports}</script>',
        f'<link rel="stylesheet" href="{url("respond.css")}" integrity="{hashes["respond.css"]}"'
        ' crossorigin="anonymous">',
        f'<script src="{url("watch.js")}" integrity="{hashes["watch.js"]}"'
        ' crossorigin="anonymous"></script>',
        *(
            f'<link rel="modulepreload" href="{url(name)}" integrity="{hashes[name]}" '
            'crossorigin="anonymous">'
            for name in names[:-1]
        ),
        f'<div data-deniable-survey="{html.escape(record.id)}"'
        f' data-deniable-aggregator="{html.escape(base)}"',
        f'     data-deniable-key="{current_key().public_key}" data-deniable-lang="{lang}"',
        f'     data-deniable-modules="{" ".join(names)}"'
        + (f'\n     data-deniable-results="{html.escape(base + results)}">' if results else ">"),
        f'  <p class="deniable-intro">{html.escape(t("intro"))}</p>',
        *(
            [f'  <p class="deniable-intro deniable-relay">{html.escape(passage)}</p>']
            if (passage := relay_passage(record.survey, t))
            else []
        ),
        f"  <noscript><p>{html.escape(t('noscript'))}</p></noscript>",
        '  <p class="deniable-status" data-deniable-loading'
        f' data-failed="{html.escape(t("load_failed"))}">{html.escape(t("loading"))}</p>',
        "</div>",
        f'<script type="module" src="{url("respond.js")}"',
        f'        integrity="{hashes["respond.js"]}" crossorigin="anonymous"></script>',
    ]
    response = Response("\n".join(lines) + "\n", mimetype="text/plain")
    response.headers["Cache-Control"] = "no-store"
    return response


def _legacy(survey_id: str) -> str:
    # Why: a /1 definition leaves mechanism parameters to Python's defaults, which a browser
    # cannot reproduce, so the client refuses it (docs/protocol.md, canonical bytes).
    return (
        f"Survey “{survey_id}” predates format {FORMAT}, whose signed definition carries "
        "every mechanism parameter, and browsers answer only that format. Answer it with "
        "the Deniable client (deniable answer), or ask its organisers for a new survey."
    )


def _unavailable(lang: str, heading: str, message: str, status: int):
    page = render_template(
        "respond_unavailable.html", lang=lang, heading=heading, message=message, style=STYLE
    )
    return page, status, _headers()


def _headers(
    inline_script: str | tuple[str, ...] | None = None, relay: str | None = None
) -> dict[str, str]:
    return {
        "Content-Security-Policy": content_security_policy(inline_script, relay),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }


def init_app(app: Flask) -> None:
    """Register the respond page and the browser client's files (once)."""
    if blueprint.name not in app.blueprints:
        app.register_blueprint(blueprint)
