"""deniable.analysis: results, crosstabs and comparisons as pandas DataFrames.

Install with ``pip install 'deniable[analysis]'``; pandas is imported here and
nowhere else.  Two sources, one set of methods:

* :class:`Aggregator`: a running aggregator's API (``GET .../results``,
  ``.../crosstab``, ``.../compare``), public surveys, or private ones with an
  operator token;
* :class:`Export`: an operator's raw export (``deniable-aggregator export``,
  JSON lines with submission keys) and the survey definition, estimated here
  with the same code the aggregator runs (``deniable.crosstab``,
  ``deniable.comparison``, ``deniable.results.question_results``).

Every frame has the estimate and its intervals as columns (``lower``,
``upper``, ``simultaneous_lower``, ``simultaneous_upper``: in a results frame the
tightest published family's, named in ``tightest``, as everywhere else; then every
family's ``<family>_lower`` ...), one row per category, cell or change.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

try:
    import pandas as pd
except ImportError as error:  # pragma: no cover - depends on the install
    from ..errors import MissingDependency

    raise MissingDependency(
        "deniable.analysis needs pandas: pip install 'deniable[analysis]'"
    ) from error

import numpy as np

from ..comparison import compare_question
from ..crosstab import axis, join_submissions, question_crosstab
from ..estimation import DEFAULT_BETA
from ..results import PUBLISHED_COLUMNS, mean_row, question_results
from ..survey import Survey

__all__ = ["Aggregator", "Export", "compare_frame", "crosstab_frame", "results_frame"]


# -- documents (as the API serves them) to frames ---------------------------------------------


# The published interval and the family it is, first (deniable.results); the rest follow.
_LEADING = (
    "question",
    "type",
    "mechanism",
    "epsilon",
    "n",
    "beta",
    *PUBLISHED_COLUMNS,
)


def results_frame(document: Mapping[str, Any]) -> pd.DataFrame:
    """A results document: one row per question category (numeric questions: one row), with
    the question's ``mechanism`` and ``epsilon`` as the CSV has them.

    ``lower``/``upper`` are the published interval, the family named in ``tightest``
    beside them (the same numbers as the JSON, the CSV, the command line and the
    dashboard); every family's own bounds follow as ``<family>_lower`` ...
    ``frame.attrs`` keeps the survey, β, n_reports, and per question id its ``n``,
    ``tightest`` and ``simultaneous_tightest`` family, and for a relayed survey its
    ``privacy`` (the question's ``central`` member).
    """
    rows = []
    for question in document["questions"]:
        beta = question.get("beta", document.get("beta"))
        common = {
            "question": question["question"],
            "type": question["type"],
            "mechanism": question.get("mechanism"),
            "epsilon": question.get("epsilon"),
            "n": question["n"],
            "beta": beta,
            "tightest": question.get("tightest"),
            "simultaneous_tightest": question.get("simultaneous_tightest"),
        }
        if question.get("categories"):
            for category in question["categories"]:
                rows.append({**common, **category})
        elif "mean" in question:
            rows.append({**common, **mean_row(question)})
        else:
            rows.append({**common, "label": None, "estimate": None})
    frame = pd.DataFrame(rows)
    if not frame.empty:
        leading = [c for c in _LEADING if c in frame.columns]
        frame = frame[leading + [c for c in frame.columns if c not in leading]]
    questions = document["questions"]
    frame.attrs.update(
        {
            "survey": document.get("survey"),
            "beta": document.get("beta"),
            "n_reports": document.get("n_reports"),
            "n": {q["question"]: q["n"] for q in questions},
            "tightest": {q["question"]: q.get("tightest") for q in questions},
            "simultaneous_tightest": {
                q["question"]: q.get("simultaneous_tightest") for q in questions
            },
            # A relayed survey's privacy per question: the central figures, and with relay
            # noise the three (local, shuffling alone, with the dummies) with their words.
            "privacy": {q["question"]: q["central"] for q in questions if q.get("central")},
        }
    )
    return frame


def crosstab_frame(document: Mapping[str, Any]) -> pd.DataFrame:
    """A crosstab document: one row per cell (``row``, ``column``), or per category for means.

    ``frame.attrs`` keeps n, β, the questions and the tightest family.
    """
    kind = document["kind"]
    if kind == "joint":
        frame = pd.DataFrame(document["cells"])
    elif kind == "means":
        frame = pd.DataFrame(document["categories"])
    else:
        frame = pd.DataFrame(columns=["row", "column", "estimate", "lower", "upper"])
    frame.attrs.update(
        {
            key: document.get(key)
            for key in (
                "survey",
                "kind",
                "n",
                "beta",
                "epsilon",
                "tightest",
                "simultaneous_tightest",
                "by",
                "of",
                "nonresponse",
                "share_of",
                "among",
            )
        }
    )
    frame.attrs["rows"] = document["rows"]["question"]
    frame.attrs["columns"] = document["columns"]["question"]
    return frame


def compare_frame(document: Mapping[str, Any]) -> pd.DataFrame:
    """A comparison document: one row per category, the change and its intervals."""
    frame = pd.DataFrame(document.get("comparisons") or [])
    frame.attrs.update({"beta": document.get("beta"), "dependence": document.get("dependence")})
    return frame


# -- sources ---------------------------------------------------------------------------------


class Aggregator:
    """A running aggregator at ``url``; ``token``: an operator token, for private surveys."""

    def __init__(self, url: str, *, token: str | None = None, session: Any = None) -> None:
        import requests

        self.url = url.rstrip("/")
        self.session = session or requests.Session()
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def _get(self, path: str, **params: Any) -> dict[str, Any]:
        response = self.session.get(
            f"{self.url}/api/v1/{path}",
            headers=self.headers,
            params={k: v for k, v in params.items() if v is not None},
            timeout=60,
        )
        if response.status_code != 200:
            from ..errors import ClientError

            try:
                detail = response.json().get("detail", response.text)
            except ValueError:
                detail = response.text
            raise ClientError(f"{response.status_code}: {detail}")
        return response.json()

    def results(self, survey: str, *, beta: float = DEFAULT_BETA) -> pd.DataFrame:
        return results_frame(self._get(f"surveys/{survey}/results", beta=beta))

    def crosstab(
        self,
        survey: str,
        rows: str,
        columns: str,
        *,
        beta: float = DEFAULT_BETA,
        nonresponse: str | None = None,
    ) -> pd.DataFrame:
        return crosstab_frame(
            self._get(
                f"surveys/{survey}/crosstab",
                rows=rows,
                columns=columns,
                beta=beta,
                nonresponse=nonresponse,
            )
        )

    def compare(
        self,
        survey: str,
        other: str,
        question: str,
        *,
        other_question: str | None = None,
        beta: float = DEFAULT_BETA,
    ) -> pd.DataFrame:
        return compare_frame(
            self._get(
                f"surveys/{survey}/compare",
                question=question,
                beta=beta,
                with_question=other_question,
                **{"with": other},
            )
        )


class Export:
    """Raw reports exported by the operator (JSON lines) and the survey definition.

    ``reports``: a path to the export, or its rows (dicts with ``question``,
    ``payload`` and ``submission``); ``definition``: the survey definition (a
    dict, a path to its JSON, or the survey document served by the aggregator).
    """

    def __init__(self, reports: str | Path | Iterable[Mapping[str, Any]], definition: Any) -> None:
        if isinstance(reports, str | Path):
            with open(reports, encoding="utf-8") as file:
                reports = [json.loads(line) for line in file if line.strip()]
        self.reports = list(reports)
        if isinstance(definition, str | Path):
            definition = json.loads(Path(definition).read_text("utf-8"))
        if isinstance(definition, Mapping) and "definition" in definition:
            definition = definition["definition"]
        self.survey = definition if isinstance(definition, Survey) else Survey.from_dict(definition)

    def _question(self, question_id: str) -> tuple[Any, list[Mapping[str, Any]]]:
        question = self.survey.question(question_id)
        return question, [r for r in self.reports if r["question"] == question_id]

    def _statistics(self, question_id: str) -> tuple[Any, Any, int]:
        question, rows = self._question(question_id)
        return question, question.statistics([r["payload"] for r in rows]), len(rows)

    def results(self, *, beta: float = DEFAULT_BETA) -> pd.DataFrame:
        questions = []
        for question in self.survey.questions:
            _, statistics, n = self._statistics(question.id)
            questions.append(question_results(question, statistics, n, beta=beta))
        return results_frame(
            {
                "survey": self.survey.id,
                "beta": beta,
                "n_reports": sum(len(self._question(q.id)[1]) for q in self.survey.questions),
                "questions": questions,
            }
        )

    def crosstab(
        self, rows: str, columns: str, *, beta: float = DEFAULT_BETA, nonresponse: str = "show"
    ) -> pd.DataFrame:
        sides = []
        for question_id in (rows, columns):
            question, found = self._question(question_id)
            joinable = [r for r in found if r.get("submission") is not None]
            keys = np.array([r["submission"] for r in joinable], dtype=np.int64)
            batch = question.oracle.decode_many([r["payload"] for r in joinable])
            sides.append((question, axis(question.oracle), keys, batch))
        (first, first_axis, first_keys, first_batch), (second, second_axis, *rest) = sides
        statistics = join_submissions(first_axis, second_axis, first_keys, first_batch, *rest)
        document = question_crosstab(first, second, statistics, beta=beta, nonresponse=nonresponse)
        return crosstab_frame({"survey": self.survey.id, **document})

    def compare(
        self,
        later: Export,
        question: str,
        *,
        other_question: str | None = None,
        beta: float = DEFAULT_BETA,
    ) -> pd.DataFrame:
        first = self._statistics(question)
        second = later._statistics(other_question or question)
        return compare_frame({"beta": beta, **compare_question(*first, *second, beta=beta)})
