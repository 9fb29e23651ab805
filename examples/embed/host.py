"""A static page on another origin that embeds a Deniable survey form (design A, CORS).

The page is what any site would write by hand: its own heading and words, and the snippet
that the aggregator prints at ``GET /surveys/<id>/embed`` pasted in unchanged.  It is served
with the page's own Content-Security-Policy, which names the aggregator in ``script-src``,
``style-src`` and ``connect-src`` and allows the snippet's inline import map by its hash
(docs/embedding.md, "The host page's CSP").  The browser talks to the aggregator directly:
the aggregator must list this page's origin in DENIABLE_CORS_ORIGINS, read when it starts.

    DENIABLE_CORS_ORIGINS=http://127.0.0.1:8090 deniable-aggregator demo --port 8000 &
    python examples/embed/host.py --aggregator http://127.0.0.1:8000 \\
        --survey demo-workplace --port 8090        # waits until the aggregator answers
    # open http://127.0.0.1:8090/

Only the standard library: this site has no server-side part beyond serving one file.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import html
import re
import sys
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGE = """<!doctype html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Staff survey — Example Corp</title>
</head>
<body>
<header><h1>Example Corp staff survey</h1></header>
<main>
<p>Tell us how work is going. The form below is run by our survey provider; your answers are
randomized in your browser before anything is sent, and we never see them.</p>
{snippet}
</main>
</body>
</html>
"""


def page(snippet: str, lang: str = "en") -> str:
    """The host page with the aggregator's snippet pasted in (unchanged)."""
    return PAGE.format(snippet=snippet, lang=html.escape(lang))


def content_security_policy(snippet: str, aggregator: str) -> str:
    """The host page's own CSP: what the embedded form needs, and nothing more.

    script-src: the aggregator (the client's modules) and the snippet's inline import map by
    its hash; style-src: the aggregator's respond.css; connect-src: the aggregator (the
    signed survey, the reports).
    """
    (import_map,) = re.findall(r'<script type="importmap">(.*?)</script>', snippet, re.S)
    digest = base64.b64encode(hashlib.sha256(import_map.encode()).digest()).decode()
    origin = aggregator.rstrip("/")
    return (
        f"default-src 'self'; script-src 'self' {origin} 'sha256-{digest}'; "
        f"style-src 'self' {origin}; connect-src 'self' {origin}; img-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )


def fetch_snippet(aggregator: str, survey: str, lang: str, wait: float = 60) -> str:
    """The snippet from the aggregator, retried until it answers (no race with its start)."""
    url = f"{aggregator.rstrip('/')}/surveys/{survey}/embed?lang={lang}"
    deadline = time.monotonic() + wait
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.read().decode()
        except urllib.error.HTTPError:
            raise  # it answered: a wrong survey id is not worth waiting for
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def serve(body: str, policy: str, port: int) -> ThreadingHTTPServer:
    data = body.encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path not in ("/", "/index.html"):
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Security-Policy", policy)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aggregator", required=True, help="aggregator base URL")
    parser.add_argument("--survey", required=True, help="survey id")
    parser.add_argument("--lang", default="en", help="the form's language (en, de)")
    parser.add_argument("--port", type=int, default=8090)
    args = parser.parse_args()
    try:
        snippet = fetch_snippet(args.aggregator, args.survey, args.lang)
    except OSError as error:
        sys.exit(f"host.py: the aggregator at {args.aggregator} did not answer: {error}")
    server = serve(
        page(snippet, args.lang), content_security_policy(snippet, args.aggregator), args.port
    )
    print(
        f"serving the host page at http://127.0.0.1:{args.port}/ "
        f"(the aggregator must allow this origin: DENIABLE_CORS_ORIGINS)"
    )
    server.serve_forever()


if __name__ == "__main__":
    main()
