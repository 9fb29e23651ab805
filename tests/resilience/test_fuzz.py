"""Hypothesis against every HTTP endpoint.

HTTP (the Flask test client, both backends): every route of the app's URL map,
with any method, path segments (known survey ids, arbitrary text, extra
segments), query string, headers, content type, bearer token and body (bytes,
JSON, mutated reports, batches and survey definitions).  Checked for every
request: no 5xx; every status >= 400 is ``application/problem+json`` with a
non-empty detail (``assert_problem``), except the dashboard's own HTML pages
for an unknown or unreadable survey or page (``/surveys/<id>``, ``/?page=``, 404/400,
text/html, for browsers) and the editor's refusals (``/editor``, pages in words);
and the stored report count changes only by the reports a 201
acknowledged for the first time.  (The OpenAPI-driven cases live in
tests/aggregator/test_openapi.py: 2 modes x 14 operations x 50 examples per backend,
at most 2,800 cases per run, asserted >= 1,000 there.)

Both command-line programs: tests/resilience/test_fuzz_cli.py.
"""

from __future__ import annotations

import json
import re
import string
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import (
    assert_problem,
    demo_survey_dict,
    env_float,
    random_reports,
)

HTTP_EXAMPLES = int(env_float("DENIABLE_FUZZ_EXAMPLES", 1000))  # per backend
DOCUMENTED_ERRORS = {400, 401, 403, 404, 405, 406, 409, 413, 414, 415, 422, 429, 431}
SURVEYS = ["fuzz", "fuzz-private", "closable", "fuzz-enrol"]
# Pages people read answer errors in plain-words HTML: a survey, its crosstab, a comparison
# of two surveys, the respond page.
PAGES = r"/|/surveys/[^/]*(/crosstab|/respond|/qr\.svg|/compare/[^/]*)?"

FUZZ_SETTINGS = settings(
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,  # the same cases on every run: a failure here is reproducible
)

# -- HTTP strategies ---------------------------------------------------------------------

HEADER_TEXT = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"),
    max_size=60,
)
TOKEN_CHARS = string.ascii_letters + string.digits + "-_!#$%&'*+.^`|~"
HEADER_NAMES = st.one_of(
    st.sampled_from(
        [
            "Accept",
            "Accept-Encoding",
            "Accept-Language",
            "Authorization",
            "Content-Encoding",
            "Cookie",
            "If-None-Match",
            "Origin",
            "Range",
            "Referer",
            "User-Agent",
            "X-Deniable-Enrolment",
            "X-Forwarded-For",
            "X-Forwarded-Proto",
            "X-Http-Method-Override",
        ]
    ),
    st.text(alphabet=TOKEN_CHARS, min_size=1, max_size=20),
)
CONTENT_TYPES = st.one_of(
    st.none(),
    st.sampled_from(
        [
            "application/json",
            "application/json; charset=utf-8",
            "application/json; charset=latin-1",
            "APPLICATION/JSON",
            "application/problem+json",
            "application/json-seq",
            "text/plain",
            "text/json",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=xyz",
            "application/octet-stream",
            "",
            ";",
            "application/json;;;",
        ]
    ),
    HEADER_TEXT,
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5)
    ),
    max_leaves=20,
)
SEGMENTS = st.one_of(
    st.sampled_from(SURVEYS + ["nope", "", ".", "..", "%00", "FUZZ", "fuzz ", "a" * 300]),
    st.text(max_size=30),
)


def valid_report(index: int, question: str | None = None) -> dict[str, str]:
    pool = random_reports(demo_survey_dict("fuzz"), 8, seed=index)
    if question is not None:
        pool = [r for r in pool if r["question"] == question] or pool
    return dict(pool[0])


@st.composite
def report_bodies(draw: st.DrawFn) -> Any:
    """Reports and batches for the fuzz survey, valid or with one thing changed."""
    count = draw(st.integers(1, 4))
    reports = [valid_report(draw(st.integers(0, 10_000))) for _ in range(count)]
    for report in reports:
        change = draw(st.sampled_from(["none"] * 5 + ["field", "drop", "add", "question"]))
        if change == "field":
            report[draw(st.sampled_from(["id", "question", "payload"]))] = draw(JSON_VALUES)
        elif change == "drop":
            report.pop(draw(st.sampled_from(["id", "question", "payload"])))
        elif change == "add":
            report[draw(st.text(max_size=8))] = draw(JSON_VALUES)
        elif change == "question":
            report["question"] = draw(
                st.sampled_from(["smoker", "transport", "tools", "overtime", "0", ""])
            )
    if count == 1 and draw(st.booleans()):
        return reports[0]
    return {"reports": reports}


@st.composite
def survey_bodies(draw: st.DrawFn) -> Any:
    definition = demo_survey_dict(draw(st.sampled_from(["new", "fuzz", "x" * 80, "Bad Id"])))
    if draw(st.booleans()):
        question = draw(st.sampled_from(definition["questions"]))
        question[draw(st.sampled_from(["epsilon", "type", "options", "id", "lo"]))] = draw(
            JSON_VALUES
        )
    body: dict[str, Any] = {"definition": definition}
    for key in draw(st.sets(st.sampled_from(["results_public", "require_enrolment", "extra"]))):
        body[key] = draw(st.one_of(st.booleans(), JSON_VALUES))
    return body


BODIES = st.one_of(
    st.none(),
    st.binary(max_size=300),
    JSON_VALUES.map(lambda v: json.dumps(v).encode()),
    report_bodies().map(lambda v: json.dumps(v).encode()),
    report_bodies().map(lambda v: json.dumps(v).encode()),
    survey_bodies().map(lambda v: json.dumps(v).encode()),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.sampled_from(
        [
            b'{"id": 1, "id": 2}',
            b"NaN",
            b'{"a": Infinity}',
            b"[" * 5000,
            b'"\\ud800"',
            b"\xef\xbb\xbf{}",
            b"\xff\xfe{\x00}\x00",
            b"1" * 5000,
            b'{"reports": []}',
            b'{"reports": {}}',
            b'{"reports": null}',
            b"{}",
            b"[]",
            b"null",
        ]
    ),
)
QUERIES = st.one_of(
    st.just(""),
    st.dictionaries(
        st.sampled_from(["beta", "format", "page", ""]) | st.text(max_size=8),
        st.sampled_from(
            ["0.05", "0", "1", "nan", "inf", "-1", "1e-320", "csv", "jsonl", "xml", "json", ""]
        )
        | st.text(max_size=12),
        max_size=3,
    ).map(urlencode),
    st.text(max_size=40).map(lambda t: quote(t, safe="=&;%+")),
)


def mostly(usual: st.SearchStrategy, unusual: st.SearchStrategy, percent: int = 70):
    """``usual`` in about ``percent``% of the cases: one odd dimension at a time gets deep."""
    return st.integers(0, 99).flatmap(lambda roll: usual if roll < percent else unusual)


@st.composite
def requests_(draw: st.DrawFn, routes: list[tuple[str, list[str]]]) -> dict[str, Any]:
    submissions = [route for route in routes if route[0].endswith("/reports")]
    rule, methods = draw(mostly(st.sampled_from(submissions), st.sampled_from(routes), 40))
    method = draw(
        mostly(
            st.sampled_from(methods),
            st.one_of(
                st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]),
                st.text(alphabet=string.ascii_uppercase, min_size=1, max_size=8),
            ),
            percent=80,
        )
    )

    def segment(match: re.Match) -> str:
        return quote(draw(mostly(st.sampled_from(SURVEYS), SEGMENTS, percent=75)), safe="")

    path = re.sub(r"<(?:[a-z]+:)?\w+>", segment, rule)
    if draw(st.integers(0, 19)) == 0:
        path += "/" + quote(draw(st.text(max_size=10)), safe="/")
    headers = dict(
        draw(mostly(st.just([]), st.lists(st.tuples(HEADER_NAMES, HEADER_TEXT), max_size=4)))
    )
    content_type = draw(mostly(st.just("application/json"), CONTENT_TYPES))
    if content_type is not None:
        headers["Content-Type"] = content_type
    reports = report_bodies().map(lambda v: json.dumps(v).encode())
    body = draw(mostly(reports, BODIES, percent=50) if rule.endswith("/reports") else BODIES)
    return {
        "method": method,
        "path": path,
        "query": draw(mostly(st.just(""), QUERIES)),
        "headers": headers,
        "authorization": draw(st.sampled_from(["operator", "none", "forged", "operator", "text"])),
        "forged": draw(HEADER_TEXT),
        "body": body,
        "enrolment": draw(st.sampled_from(["none", "issued", "forged"])),
    }


def http_routes(app) -> list[tuple[str, list[str]]]:
    """Every rule of the app's URL map with its methods (HEAD/OPTIONS are fuzzed anyway)."""
    routes = []
    for rule in app.url_map.iter_rules():
        methods = sorted(set(rule.methods) - {"HEAD", "OPTIONS"}) or ["GET"]
        routes.append((rule.rule, methods))
    return routes


@pytest.fixture
def fuzz_app(app, storage, operator_headers) -> dict[str, Any]:
    client = app.test_client()
    for survey_id in SURVEYS:
        body: dict[str, Any] = {
            "definition": demo_survey_dict(survey_id),
            "results_public": survey_id != "fuzz-private",
        }
        if survey_id == "fuzz-enrol":
            body["require_enrolment"] = True
        response = client.post("/api/v1/surveys", json=body, headers=operator_headers)
        assert response.status_code == 201, response.data
    tokens = storage.issue_enrolment_tokens("fuzz-enrol", 50)
    return {"client": client, "tokens": tokens, "known": set(), "statuses": {}}


def test_every_endpoint_survives_arbitrary_requests(app, storage, operator_headers, fuzz_app):
    routes = http_routes(app)
    assert len(routes) >= 13, routes
    client = fuzz_app["client"]
    known: set[tuple[str, str]] = set()
    counts = {"requests": 0, "acknowledged": 0}

    @given(case=requests_(routes))
    @settings(FUZZ_SETTINGS, max_examples=HTTP_EXAMPLES)
    def run(case: dict[str, Any]) -> None:
        path = case["path"]
        if re.fullmatch(r"/api/v1/surveys/fuzz/close/?", path):
            path = path.replace("/fuzz/", "/closable/")  # keep the main target open
        headers = dict(case["headers"])
        if case["authorization"] == "operator":
            headers["Authorization"] = operator_headers["Authorization"]
        elif case["authorization"] == "forged":
            headers["Authorization"] = "Bearer dnb_" + quote(case["forged"])
        elif case["authorization"] == "text":
            headers["Authorization"] = case["forged"]
        if case["enrolment"] == "issued":
            headers["X-Deniable-Enrolment"] = fuzz_app["tokens"][counts["requests"] % 50]
        elif case["enrolment"] == "forged":
            headers["X-Deniable-Enrolment"] = "dne_" + quote(case["forged"])
        url = path + (f"?{case['query']}" if case["query"] else "")
        before = storage.count_reports()
        response = client.open(url, method=case["method"], headers=headers, data=case["body"])
        after = storage.count_reports()
        counts["requests"] += 1
        status = response.status_code
        key = (case["method"], status)
        fuzz_app["statuses"][key] = fuzz_app["statuses"].get(key, 0) + 1

        assert status < 500, (case, response.get_data()[:300])
        if status >= 400:
            assert status in DOCUMENTED_ERRORS, (status, case)
            dashboard_page = (
                not path.startswith("/api/")
                and status in (400, 404)
                and response.mimetype == "text/html"
                and re.fullmatch(PAGES, path) is not None
            ) or (
                # The editor is for browsers: its refusals (sign-in, too many failed
                # sign-ins, CSRF, unknown draft) are pages in words, never a 5xx.
                re.fullmatch(r"/editor(/.*)?", path) is not None
                and status in (400, 401, 403, 404, 405, 409, 413, 429)
                and response.mimetype == "text/html"
            )
            if case["method"] == "HEAD":
                assert response.mimetype in ("application/problem+json", "text/html")
            elif not dashboard_page:
                assert_problem(response, status)
        survey_match = re.fullmatch(r"/api/v1/surveys/([^/?]*)/reports(?:/bulk)?", path)
        if status == 201 and case["method"] == "POST" and survey_match:
            survey = survey_match.group(1)
            ids = {(survey, i) for i in response.get_json()["reports"]}
            new = ids - known
            known.update(new)
            counts["acknowledged"] += len(new)
            assert after == before + len(new)
        else:
            assert after == before, (case, status)

    run()
    assert storage.count_reports() == len(known)
    statuses = fuzz_app["statuses"]
    print(
        f"\n[fuzz/http] {counts['requests']} requests, {counts['acknowledged']} reports "
        f"acknowledged, statuses {sorted(statuses.items())}"
    )
    # The generator reached past validation: reports stored, and several kinds of refusal.
    assert counts["acknowledged"] > 0
    assert {201, 400, 404, 405, 415, 422} <= {status for _, status in statuses}
