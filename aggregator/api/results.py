"""Results: estimates and every interval family from the folded statistics (JSON or CSV).

Every call first folds pending reports (read-your-writes), then hands each
question's stored statistics to ``deniable.results.question_results``: the aggregator never
restates a mechanism's parameters.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from flask import Blueprint, Response, current_app, request

from deniable.errors import InvalidParameter
from deniable.estimation import DEFAULT_BETA
from deniable.results import PUBLISHED_COLUMNS, mean_row, question_results
from deniable.survey import Question, Survey

from ..relay_noise import real_counts
from ..storage import SurveyRecord, current_storage
from . import relayed
from .common import choice_parameter, is_operator, json_text, require_operator

__all__ = [
    "BETAS",
    "blueprint",
    "compute_results",
    "parse_beta",
    "results_by_question",
    "results_cache",
    "statistics_key",
    "to_csv",
    "unpacked",
    "wants_csv",
]

blueprint = Blueprint("results", __name__)

CSV_COLUMNS = (
    "question",
    "type",
    "mechanism",
    "epsilon",
    "n",
    "beta",
    # The published interval (deniable.results): the tightest family's, named beside it.
    *PUBLISHED_COLUMNS,
    "precision",
    "clipped",
    "norm_sub",
    "projected",
    "ibu",
    # An optional, conditional or scale question's row: the estimate its interval is built
    # around (deniable.nonresponse), beside the published point.
    "raw",
    # Every family's own interval (deniable.estimation, deniable.exact_tail).
    "chebyshev_lower",
    "chebyshev_upper",
    "chebyshev_simultaneous_lower",
    "chebyshev_simultaneous_upper",
    "chebyshev_exact_lower",
    "chebyshev_exact_upper",
    "chebyshev_exact_simultaneous_lower",
    "chebyshev_exact_simultaneous_upper",
    "bernstein_lower",
    "bernstein_upper",
    "bernstein_simultaneous_lower",
    "bernstein_simultaneous_upper",
    "exact_tail_lower",
    "exact_tail_upper",
    "exact_tail_simultaneous_lower",
    "exact_tail_simultaneous_upper",
    "variance_bound",
    "half_width",
    "simultaneous_half_width",
    # Relayed surveys (api/relayed.py): the central ε of the smallest batch, at central_delta.
    "central_epsilon",
    "central_delta",
    "smallest_batch",
    # With relay noise: the three figures (local, shuffling alone, with the dummies).
    "local_epsilon",
    "shuffle_epsilon",
    "noised_epsilon",
)
# Why: a spreadsheet runs a cell starting with one of these as a formula (or, after
# stripping leading whitespace or NUL, one that follows them).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\0")
EXTENSION = "deniable.results_cache"
# A serialized body in zlib-compressed pieces (one per question); decompressed and
# concatenated they are the whole body.
Body = tuple[bytes, ...]
# A relayed survey's per unit batch figures (api/relayed.py), None for a survey not relayed.
Batches = dict[str, dict[str, int]] | None
QUESTIONS_KEY = b', "questions": ['
# Why level 1: results JSON shrinks ~50x even at the fastest level (0.4 s for 46 MB).
COMPRESSION_LEVEL = 1
# The β levels served over HTTP: 99.9%, 99%, 98%, 95%, 90% and 80% confidence.
BETAS = (0.001, 0.01, 0.02, 0.05, 0.1, 0.2)


class ResultsCache:
    """An LRU of serialized result bodies, bounded in bytes, computed one at a time.

    Keys are (survey, status, β, format, digest of the folded statistics), so an
    entry is only reused while no report arrived since.  Why compressed bytes and
    not documents: the results of the largest allowed survey (100 questions x
    1,024 options) are ~46 MB of JSON (far more as Python objects) but ~1 MB
    compressed, and an entry count is no bound at all.  Why one
    computation at a time per process, on one thread: each allocates a
    question's worth of objects at a time; concurrent requests for the same key
    wait and then hit the cache instead of computing it again.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self._entries: OrderedDict[Any, tuple[Body, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.computing = threading.Lock()
        # Why one thread: the allocator keeps an arena per thread, and a document built on
        # each of eight request threads would leave eight arenas' worth of fragments.
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="results")

    def get(self, key: Any) -> Body | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def put(self, key: Any, body: Body) -> None:
        size = sum(len(piece) for piece in body)
        if size > self.max_bytes:
            return
        with self._lock:
            _, previous = self._entries.pop(key, ((), 0))
            self.size += size - previous
            self._entries[key] = (body, size)
            while self.size > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self.size -= dropped


def results_cache() -> ResultsCache:
    cache = current_app.extensions.get(EXTENSION)
    if cache is None:
        cache = current_app.extensions.setdefault(
            EXTENSION, ResultsCache(current_app.config["RESULTS_CACHE_BYTES"])
        )
    return cache


def parse_beta() -> float:
    """β from ``?beta=``: one of :data:`BETAS` (400 otherwise).

    Why a fixed set: every distinct β costs a full computation (seconds of CPU
    on the largest allowed survey) and would need a cache entry of its own; a
    handful of conventional levels covers every use.
    """
    text = request.args.get("beta")
    if text is None:
        return DEFAULT_BETA
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    for allowed in BETAS:
        if math.isclose(value, allowed, rel_tol=1e-9):
            return allowed
    raise InvalidParameter(
        f"beta must be one of {', '.join(f'{b:g}' for b in BETAS)}, got {text[:40]!r}"
    )


def statistics_key(record: SurveyRecord, beta: float, kind: str) -> tuple[Any, ...]:
    statistics = current_storage().fold(record.id, chunk=current_app.config["FOLD_CHUNK"])
    digest = hashlib.sha256()
    for question_id, folded in statistics.items():
        digest.update(f"{question_id}:{folded.n}:".encode())
        digest.update(np.ascontiguousarray(folded.statistics, dtype=np.int64).tobytes())
    # A relayed survey's batch figures change the document even when no report was stored.
    batches = relayed.batch_summary(record)
    if batches is not None:
        digest.update(json.dumps(batches, sort_keys=True).encode())
    return (record.id, record.status, float(beta), kind, digest.hexdigest()), statistics, batches


def _header(
    record: SurveyRecord, statistics: dict[str, Any], beta: float, batches: Batches
) -> dict[str, Any]:
    # n: the real reports, less the dummies a relay added (api/relayed.py; 0 without noise)
    real = real_counts(record, statistics, batches)
    head = {
        "survey": record.id,
        "title": record.survey.title,
        "status": record.status,
        "beta": beta,
        "n_reports": sum(real.values()),
    }
    if relayed.relay_terms(record) is not None:
        head["relay"] = relayed.header(record, batches)
        dummies = sum(s.n for s in statistics.values()) - head["n_reports"]
        if dummies:
            head["relay"] |= {"dummies": dummies, "respondents": max(real.values(), default=0)}
    return head


def _question_results(
    record: SurveyRecord, statistics: dict[str, Any], beta: float, batches: Batches
) -> Iterator[tuple[Question, dict[str, Any]]]:
    """Each question with its results, one at a time (never a whole document in memory)."""
    for question in record.survey.questions:
        folded = statistics[question.id]
        noise, dummies = relayed.noise_of(record, question, batches)
        # n: the real respondents, the stored reports less the dummies the relay added
        n = max(folded.n - dummies, 0)
        result = question_results(question, folded.statistics, n, beta=beta, noise=noise)
        if batches is not None:
            result["central"] = relayed.central(record, question, batches)
        yield question, result


def _json_body(
    record: SurveyRecord, statistics: dict[str, Any], beta: float, batches: Batches
) -> Body:
    """The JSON document, serialized question by question into one piece each.

    Why pieces: no whole document (~50 MB of objects on the largest survey) and no
    single ~20 MB buffer is ever allocated, so a worker's memory returns to its
    level after each computation instead of fragmenting.
    """
    head = json_text(_header(record, statistics, beta, batches))
    pieces = [_pack(head[:-1].encode("utf-8") + QUESTIONS_KEY)]
    for index, (_, result) in enumerate(_question_results(record, statistics, beta, batches)):
        pieces.append(_pack((b", " if index else b"") + json_text(result).encode("utf-8")))
    pieces.append(_pack(b"]}"))
    return tuple(pieces)


def _pack(piece: bytes) -> bytes:
    return zlib.compress(piece, COMPRESSION_LEVEL)


def unpacked(body: Body) -> Iterator[bytes]:
    """The body's bytes, piece by piece (never all at once)."""
    for piece in body:
        yield zlib.decompress(piece)


def _csv_body(
    record: SurveyRecord, statistics: dict[str, Any], beta: float, batches: Batches
) -> Body:
    """The CSV table, one piece per question (see :func:`_json_body`)."""
    buffer = io.StringIO()
    writer = csv_writer(buffer)
    pieces = []
    for question, result in _question_results(record, statistics, beta, batches):
        for row in question_rows(question, result, beta):
            writer.writerow({column: _cell(row.get(column)) for column in CSV_COLUMNS})
        pieces.append(_pack(buffer.getvalue().encode("utf-8")))
        buffer.seek(0)
        buffer.truncate()
    return tuple(pieces)


def results_body(record: SurveyRecord, beta: float, kind: str = "json") -> Body:
    """The results of a survey as JSON or CSV body pieces: fold pending reports, then estimate."""
    key, statistics, batches = statistics_key(record, beta, kind)
    cache = results_cache()
    body = cache.get(key)
    if body is not None:
        return body
    with cache.computing:
        body = cache.get(key)
        if body is None:
            render = _csv_body if kind == "csv" else _json_body
            # Why the batch figures read with the key: the body shows what the key hashed,
            # and the executor's thread (no app context) does no I/O.
            body = cache.executor.submit(render, record, statistics, beta, batches).result()
            cache.put(key, body)
    return body


def compute_results(record: SurveyRecord, beta: float) -> dict[str, Any]:
    """The results document of a survey (the CLI's view of the API body)."""
    return json.loads(b"".join(unpacked(results_body(record, beta, "json"))))


def results_by_question(
    record: SurveyRecord, beta: float
) -> tuple[dict[str, Any], Iterator[dict[str, Any]]]:
    """(the document without ``questions``, each question's results in turn).

    The dashboard's view of the same cached body, parsed one question at a time.
    """
    body = results_body(record, beta, "json")
    head = json.loads(zlib.decompress(body[0])[: -len(QUESTIONS_KEY)] + b"}")

    def questions() -> Iterator[dict[str, Any]]:
        for piece in body[1:-1]:
            yield json.loads(zlib.decompress(piece).removeprefix(b", "))

    return head, questions()


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return "" if value is None else value


def question_rows(question: Question, result: dict[str, Any], beta: float) -> list[dict[str, Any]]:
    """The CSV rows of one question: one per category (one for a numeric question)."""
    common = {name: result.get(name) for name in ("question", "type", "mechanism", "epsilon")}
    common |= {"n": result["n"], "beta": result.get("beta", beta)}
    common |= {
        name: result.get(name)
        for name in (
            "variance_bound",
            "half_width",
            "simultaneous_half_width",
            "tightest",
            "simultaneous_tightest",
            "precision",
        )
    }
    if result.get("central"):
        common |= {
            "central_epsilon": result["central"]["central_epsilon"],
            "central_delta": result["central"]["delta"],
            "smallest_batch": result["central"]["batch"],
        }
        if "noised_epsilon" in result["central"]:
            common |= {
                name: result["central"][name]
                for name in ("local_epsilon", "shuffle_epsilon", "noised_epsilon")
            }
    if "categories" in result:
        return [{**common, **_own(category)} for category in result["categories"]]
    if "mean" in result:
        return [{**common, **mean_row(result), "clipped": result["clipped"]}]
    return [{**common, "label": label, "estimate": None} for label in question.labels]


# The question's worst-case figures of its frequencies over all respondents (Chebyshev's):
# not those of a row whose interval has its own construction (a ratio among those who
# answered, a scale's mean and NPS: deniable.nonresponse), which leaves them empty.
_QUESTION_WIDTHS = ("variance_bound", "half_width", "simultaneous_half_width")


def _own(category: dict[str, Any]) -> dict[str, Any]:
    if category.get("tightest") == "ratio":
        return {**dict.fromkeys(_QUESTION_WIDTHS), **category}
    return category


def csv_rows(document: dict[str, Any], survey: Survey) -> list[dict[str, Any]]:
    """One row per question category (per question for numeric questions)."""
    rows = []
    for question, result in zip(survey.questions, document["questions"], strict=True):
        rows += question_rows(question, result, document["beta"])
    return rows


def csv_writer(buffer: io.StringIO) -> csv.DictWriter:
    """RFC 4180: CRLF rows, and any field holding a quote, comma, CR or LF is quoted."""
    writer = csv.DictWriter(
        buffer, CSV_COLUMNS, extrasaction="ignore", lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL
    )
    writer.writeheader()
    return writer


def to_csv(document: dict[str, Any], survey: Survey) -> str:
    buffer = io.StringIO()
    writer = csv_writer(buffer)
    for row in csv_rows(document, survey):
        writer.writerow({column: _cell(row.get(column)) for column in CSV_COLUMNS})
    return buffer.getvalue()


def wants_csv() -> bool:
    if "format" in request.args:
        return choice_parameter("format", ("json", "csv"), "json") == "csv"
    best = request.accept_mimetypes.best_match(["application/json", "text/csv"])
    return (
        best == "text/csv"
        and request.accept_mimetypes["text/csv"] > request.accept_mimetypes["application/json"]
    )


@blueprint.get("/surveys/<survey_id>/results")
def results(survey_id: str) -> Response:
    # Why the parameters first: a request that can only be refused touches no storage.
    beta = parse_beta()
    csv_wanted = wants_csv()
    record = current_storage().get_survey(survey_id, count=False)
    if not record.results_public:
        require_operator()
    else:
        is_operator()  # Why: a wrong token is refused (403) even where none is needed.
    body = unpacked(results_body(record, beta, "csv" if csv_wanted else "json"))
    if csv_wanted:
        response = Response(body, mimetype="text/csv")
        response.headers["Content-Disposition"] = f'attachment; filename="{survey_id}-results.csv"'
        return response
    return Response(body, mimetype="application/json")
