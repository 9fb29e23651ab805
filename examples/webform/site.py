"""A web-form site whose server never sees a true answer (design B: the backend relays).

The site serves its own page.  The page loads the Deniable browser client (served by
this site from the installed ``deniable`` package), verifies the survey's signature
against the aggregator key pinned in the page, randomizes the answers in the browser
and posts the noisy batch to *this* site, which logs it and relays it unchanged to the
aggregator.  The site's server (and its logs) see only noisy reports: the same bytes
the aggregator stores.

    deniable-aggregator demo --no-serve ...            # or any aggregator with a survey
    python examples/webform/site.py --aggregator http://127.0.0.1:8000 \\
        --survey demo-workplace --port 8080
    # open http://127.0.0.1:8080/ and answer; watch this terminal

The relay forwards the enrolment header if present and returns the aggregator's
status and body, so the page's retries stay idempotent (same body, same ids).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import html
import json
import logging
from importlib import resources

import requests
from flask import Flask, Response, abort, request

from deniable.aggregator.respond import MODULES, PAGE_FILES, STYLE, integrity

ENROLMENT_HEADER = "X-Deniable-Enrolment"
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Staff survey</title><style>{style}</style>
<link rel="stylesheet" href="/js/respond.css" integrity="{css}">
<script type="importmap">{import_map}</script>
<script src="/js/watch.js" integrity="{watch}"></script>
<script type="module" src="/js/respond.js" integrity="{sri}"></script></head>
<body><main><h1>Staff survey</h1>
<div data-deniable-survey="{survey}" data-deniable-aggregator="" data-deniable-key="{key}">
<p class="deniable-intro">This form randomizes your answers in your browser. Our server only
ever receives the noisy values, and relays them to the survey's aggregator.</p>
<noscript><p>JavaScript is required: your answers are randomized in your browser, and without
it nothing is sent.</p></noscript>
<p class="deniable-status" data-deniable-loading>Loading the survey…</p></div></main></body></html>
"""
# Every module pinned by the import map's integrity: a module fetched again after a failed
# first fetch is checked too (docs/embedding.md).
IMPORT_MAP = json.dumps({"integrity": {f"/js/{name}": integrity()[name] for name in MODULES}})
MAP_HASH = "sha256-" + base64.b64encode(hashlib.sha256(IMPORT_MAP.encode()).digest()).decode()

logger = logging.getLogger("webform")


def create_site(aggregator: str, survey: str, public_key: str) -> Flask:
    """The site: its page, the client modules, and a relay of the two protocol routes."""
    app = Flask(__name__)
    app.config["RECEIVED"] = []  # every body the site's server saw (the example's point)
    aggregator = aggregator.rstrip("/")
    page = PAGE.format(
        style=STYLE,
        sri=integrity()["respond.js"],
        survey=html.escape(survey),
        key=html.escape(public_key),
        css=integrity()["respond.css"],
        watch=integrity()["watch.js"],
        import_map=IMPORT_MAP,
    )

    @app.get("/")
    def index() -> Response:
        response = Response(page, mimetype="text/html")
        response.headers["Content-Security-Policy"] = (
            f"default-src 'none'; script-src 'self' '{MAP_HASH}'; connect-src 'self';"
            " style-src 'self' 'unsafe-inline';"
            " form-action 'none'; base-uri 'none'"
        )
        return response

    @app.get("/js/<name>")
    def module(name: str) -> Response:
        if name not in (*MODULES, *PAGE_FILES):
            abort(404)
        data = resources.files("deniable.client").joinpath("browser", name).read_bytes()
        return Response(data, mimetype="text/css" if name.endswith(".css") else "text/javascript")

    @app.get("/api/v1/surveys/<survey_id>")
    def survey_document(survey_id: str) -> Response:
        # The signed document passes through unchanged; the page verifies it against the
        # aggregator's key, so this site cannot alter the questions or the ε.
        upstream = requests.get(f"{aggregator}/api/v1/surveys/{survey_id}", timeout=10)
        return Response(
            upstream.content,
            upstream.status_code,
            mimetype=upstream.headers.get("Content-Type", "application/json"),
        )

    @app.post("/api/v1/surveys/<survey_id>/reports")
    def relay(survey_id: str) -> Response:
        body = request.get_data()
        app.config["RECEIVED"].append(json.loads(body))
        logger.warning("received (noisy, relayed as is): %s", body.decode("utf-8", "replace"))
        headers = {"Content-Type": "application/json"}
        if ENROLMENT_HEADER in request.headers:
            headers[ENROLMENT_HEADER] = request.headers[ENROLMENT_HEADER]
        try:
            upstream = requests.post(
                f"{aggregator}/api/v1/surveys/{survey_id}/reports",
                data=body,
                headers=headers,
                timeout=10,
            )
        except requests.RequestException:
            return Response(
                '{"title": "aggregator unreachable"}', 502, mimetype="application/problem+json"
            )
        return Response(
            upstream.content, upstream.status_code, mimetype=upstream.headers.get("Content-Type")
        )

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aggregator", required=True, help="aggregator base URL")
    parser.add_argument("--survey", required=True, help="survey id")
    parser.add_argument("--key", help="aggregator public key (base64); default: fetched once")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args()
    key = args.key or requests.get(f"{args.aggregator}/api/v1/key", timeout=10).json()["public_key"]
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    create_site(args.aggregator, args.survey, key).run(host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
