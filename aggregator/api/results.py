"""Results: estimates and every interval family from the folded statistics (JSON or CSV).

Every call first folds pending reports (read-your-writes), then hands each
question's stored statistics to ``Question.results``: the aggregator never
restates a mechanism's parameters.
"""

from __future__ import annotations

import csv
import io
import threading
from collections import OrderedDict
from typing import Any

from flask import Blueprint, Response, current_app, request

from deniable.errors import InvalidParameter
from deniable.estimation import DEFAULT_BETA, check_beta
from deniable.survey import Survey

from ..storage import SurveyRecord, current_storage
from .common import choice_parameter, is_operator, json_response, require_operator

blueprint = Blueprint("results", __name__)

CSV_COLUMNS = (
    "question", "type", "mechanism", "epsilon", "n", "beta", "label", "estimate", "lower",
    "upper", "simultaneous_lower", "simultaneous_upper", "clipped", "norm_sub", "projected",
    "variance_bound", "half_width", "simultaneous_half_width",
    # Tighter interval families beside today's Chebyshev (deniable.estimation).
    "chebyshev_exact_lower", "chebyshev_exact_upper", "chebyshev_exact_simultaneous_lower",
    "chebyshev_exact_simultaneous_upper", "bernstein_lower", "bernstein_upper",
    "bernstein_simultaneous_lower", "bernstein_simultaneous_upper", "tightest",
    "simultaneous_tightest", "precision",
)  # fmt: skip
# Why: a spreadsheet runs a cell starting with one of these as a formula (or, after
# stripping leading whitespace or NUL, one that follows them).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\0")
EXTENSION = "deniable.results_cache"


class ResultsCache:
    """A small LRU of result documents, keyed by the exact folded statistics."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[Any, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> dict[str, Any] | None:
        with self._lock:
            document = self._entries.get(key)
            if document is not None:
                self._entries.move_to_end(key)
            return document

    def put(self, key: Any, document: dict[str, Any]) -> None:
        if self.size == 0:
            return
        with self._lock:
            self._entries[key] = document
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)


def _cache() -> ResultsCache:
    cache = current_app.extensions.get(EXTENSION)
    if cache is None:
        cache = current_app.extensions.setdefault(
            EXTENSION, ResultsCache(current_app.config["RESULTS_CACHE"])
        )
    return cache


def parse_beta() -> float:
    text = request.args.get("beta")
    if text is None:
        return DEFAULT_BETA
    try:
        value = float(text)
    except ValueError:
        raise InvalidParameter(f"beta must be a number in (0, 1), got {text[:40]!r}") from None
    return check_beta(value)


def compute_results(record: SurveyRecord, beta: float) -> dict[str, Any]:
    """The results document of a survey: fold pending reports, then estimate."""
    statistics = current_storage().fold(record.id, chunk=current_app.config["FOLD_CHUNK"])
    key = (
        record.id,
        record.status,
        beta,
        tuple((qid, s.n, s.statistics.tobytes()) for qid, s in statistics.items()),
    )
    cache = _cache()
    cached = cache.get(key)
    if cached is not None:
        return cached
    questions = [
        question.results(statistics[question.id].statistics, statistics[question.id].n, beta=beta)
        for question in record.survey.questions
    ]
    document = {
        "survey": record.id,
        "title": record.survey.title,
        "status": record.status,
        "beta": beta,
        "n_reports": sum(s.n for s in statistics.values()),
        "questions": questions,
    }
    cache.put(key, document)
    return document


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return "" if value is None else value


def csv_rows(document: dict[str, Any], survey: Survey) -> list[dict[str, Any]]:
    """One row per question category (per question for numeric questions)."""
    rows = []
    for question, result in zip(survey.questions, document["questions"], strict=True):
        common = {name: result.get(name) for name in ("question", "type", "mechanism", "epsilon")}
        common |= {"n": result["n"], "beta": result.get("beta", document["beta"])}
        common |= {name: result.get(name) for name in
                   ("variance_bound", "half_width", "simultaneous_half_width", "tightest",
                    "simultaneous_tightest", "precision")}  # fmt: skip
        if "categories" in result:
            for category in result["categories"]:
                rows.append({**common, **category})
        elif "mean" in result:
            rows.append({**common, "label": "mean", "estimate": result["mean"],
                         "lower": result["lower"], "upper": result["upper"],
                         "clipped": result["clipped"],
                         **{key: value for key, value in result.items()
                            if key.startswith(("chebyshev_exact_", "bernstein_"))}})  # fmt: skip
        else:
            rows.extend({**common, "label": label, "estimate": None} for label in question.labels)
    return rows


def to_csv(document: dict[str, Any], survey: Survey) -> str:
    buffer = io.StringIO()
    # RFC 4180: CRLF rows, and any field holding a quote, comma, CR or LF is quoted.
    writer = csv.DictWriter(buffer, CSV_COLUMNS, extrasaction="ignore", lineterminator="\r\n",
                            quoting=csv.QUOTE_MINIMAL)  # fmt: skip
    writer.writeheader()
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
    record = current_storage().get_survey(survey_id, count=False)
    if not record.results_public:
        require_operator()
    else:
        is_operator()  # Why: a wrong token is refused (403) even where none is needed.
    beta = parse_beta()
    csv_wanted = wants_csv()
    document = compute_results(record, beta)
    if csv_wanted:
        response = Response(to_csv(document, record.survey), mimetype="text/csv")
        response.headers["Content-Disposition"] = f'attachment; filename="{survey_id}-results.csv"'
        return response
    return json_response(document)
