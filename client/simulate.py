"""SIMULATION ONLY: synthetic respondents for load tests and demos.

Real answers go through :meth:`SurveyClient.answer` (CSPRNG, one report at a
time, ledger, memoization).  Here, for speed, both the synthetic true answers
and the noise come from one seeded numpy ``Generator`` through the mechanisms'
vectorized ``randomize_many`` and ``encode_many``; longitudinal questions draw
both layers afresh (each synthetic respondent is a new device).  The survey's
signature is still verified before anything is posted, and report ids are
``uuid4`` as always.  Each synthetic respondent walks the survey's paths
(:func:`path_columns`): a question whose ``show_if`` fails is not applicable, and an
optional one shown is declined at ``decline_rate``.

Without an operator token each synthetic respondent is one POST to the public
route (one report per question, as a device sends).  With ``operator_token``
many respondents go per request to the operator-only bulk route
(``.../reports/bulk``), up to ``batch_reports`` reports each, grouped by
respondent (``{"respondents": [...]}``) so their answers can be crosstabbed.
"""

from __future__ import annotations

import json
import math
import re
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from deniable.errors import InvalidParameter
from deniable.lazy import np
from deniable.questionnaire import DECLINED, NOT_APPLICABLE, NonResponse, shown
from deniable.survey import Question, Survey
from deniable.terminal import Progress

from .policy import Policy
from .session import SurveyClient
from .state import StateStore

__all__ = ["DECLINE_RATE", "DISTRIBUTIONS", "path_columns", "simulate", "true_answers"]

DISTRIBUTIONS = ("uniform", "skewed")
# Of the optional questions a simulated respondent is shown, the share declined by default.
DECLINE_RATE = 0.1
OPERATOR_TOKEN = re.compile(r"[!-~]{1,256}")
SIMULATION_POLICY = Policy(
    max_question_epsilon=20.0,
    max_survey_epsilon=1e9,
    lifetime_epsilon=1e12,
    period_epsilon=1e12,
)


def _category_weights(size: int, distribution: str) -> np.ndarray:
    if distribution == "uniform":
        weights = np.ones(size)
    else:
        weights = 1.0 / np.arange(1, size + 1)
    return weights / weights.sum()


def true_answers(
    question: Question, count: int, distribution: str, rng: np.random.Generator
) -> np.ndarray:
    """Synthetic true answers in mechanism terms (indices, bit rows or numbers), each one
    answered (an optional question's non-response bits stay 0): :func:`path_columns` then
    walks each respondent's path."""
    extras = len(question.extras)
    if question.type == "numeric":
        lo, hi = question.lo, question.hi
        share = rng.random(count) if distribution == "uniform" else rng.beta(1.0, 3.0, count)
        numbers = lo + (hi - lo) * share  # type: ignore[operator]
        return np.stack([np.zeros(count), numbers], axis=1) if extras else numbers
    if question.type == "multiple_choice":
        m = len(question.options)
        if distribution == "uniform":
            chance = np.full(m, 0.5)
        else:
            chance = 1.0 / np.arange(2, m + 2)
        bits = (rng.random((count, m)) < chance).astype(np.int64)
        return np.hstack([bits, np.zeros((count, extras), np.int64)])
    weights = _category_weights(question.base_size, distribution)
    return rng.choice(question.base_size, size=count, p=weights).astype(np.int64)


def _base(question: Question, value: Any) -> Any:
    """A respondent's answer in mechanism terms as conditions read it (its base value)."""
    if question.type == "multiple_choice":
        return tuple(int(bit) for bit in value[: len(question.options)])
    if question.type == "numeric":
        return float(value[1]) if question.extras else float(value)
    return int(value)


def _nonresponse(question: Question, value: NonResponse) -> Any:
    """A non-response value in the mechanism's terms, as a row of the vectorized column."""
    position = question.extras.index(value.label)
    if question.type == "numeric":  # status 1 + position; the number is not reported
        return (1 + position, question.lo)
    if question.type == "multiple_choice":
        extras = [int(i == position) for i in range(len(question.extras))]
        return [0] * len(question.options) + extras
    return question.base_size + position


def path_columns(
    survey: Survey,
    truths: dict[str, np.ndarray],
    *,
    decline_rate: float = DECLINE_RATE,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """Each respondent's path through the survey over :func:`true_answers`' columns (copies):
    a question whose ``show_if`` fails on the earlier answers is ``not_applicable``, an
    optional question shown is ``declined`` with probability ``decline_rate``, as
    :meth:`Survey.path_answers` says of a real respondent."""
    columns = {q.id: np.array(truths[q.id], copy=True) for q in survey.questions}
    if not any(q.extras for q in survey.questions):
        return columns
    count = len(columns[survey.questions[0].id])
    declines = rng.random((count, len(survey.questions))) < decline_rate
    for row in range(count):
        seen: dict[str, Any] = {}
        for position, question in enumerate(survey.questions):
            value = columns[question.id][row]
            if not shown(question.show_if, seen):
                seen[question.id] = NOT_APPLICABLE
            elif question.optional and declines[row, position]:
                seen[question.id] = DECLINED
            else:
                seen[question.id] = _base(question, value)
                continue
            columns[question.id][row] = _nonresponse(question, seen[question.id])
    return columns


def expected_truth(question: Question, distribution: str) -> dict[str, float]:
    """The population value the estimates should approach (for the summary)."""
    if question.type == "numeric":
        lo, hi = question.lo, question.hi
        return {"mean": lo + (hi - lo) * (0.5 if distribution == "uniform" else 0.25)}  # type: ignore[operator]
    if question.type == "multiple_choice":
        m = len(question.options)
        chance = [0.5] * m if distribution == "uniform" else [1 / (i + 2) for i in range(m)]
        return dict(zip(question.options, chance, strict=True))
    weights = _category_weights(question.base_size, distribution)
    return dict(zip(question.base_labels, weights, strict=True))


@dataclass(frozen=True)
class SimulationResult:
    respondents: int
    reports: int
    seconds: float

    @property
    def respondents_per_second(self) -> float:
        return self.respondents / self.seconds if self.seconds > 0 else math.inf


def batches(survey: Survey, respondents: int, batch_reports: int) -> list[int]:
    per = max(1, batch_reports // len(survey.questions))
    return [min(per, respondents - start) for start in range(0, respondents, per)]


def simulate(
    base_url: str,
    survey_id: str,
    *,
    respondents: int,
    distribution: str = "uniform",
    decline_rate: float = DECLINE_RATE,
    seed: int | None = None,
    batch_reports: int = 500,
    concurrency: int = 4,
    trusted_key: str | None = None,
    operator_token: str | None = None,
    progress: TextIO | None = sys.stderr,
    client_factory: Callable[..., SurveyClient] = SurveyClient,
    **client_options: Any,
) -> SimulationResult:
    """Post ``respondents`` synthetic respondents' reports; SIMULATION ONLY.

    One respondent per request on the public route, or batches of about
    ``batch_reports`` reports on the bulk route when ``operator_token`` is given.  Each
    respondent follows the survey's paths (:func:`path_columns`): questions whose
    ``show_if`` fails are not applicable, optional ones declined at ``decline_rate``.
    """
    if isinstance(respondents, bool) or not isinstance(respondents, int) or respondents < 1:
        raise InvalidParameter(f"respondents must be a positive integer, got {respondents!r}")
    if distribution not in DISTRIBUTIONS:
        raise InvalidParameter(f"distribution must be one of {', '.join(DISTRIBUTIONS)}")
    if isinstance(decline_rate, bool) or not 0.0 <= decline_rate <= 1.0:
        raise InvalidParameter(f"decline rate must be from 0 to 1, got {decline_rate!r}")
    if isinstance(batch_reports, bool) or not isinstance(batch_reports, int) or batch_reports < 1:
        raise InvalidParameter(f"batch size must be a positive integer, got {batch_reports!r}")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise InvalidParameter(f"concurrency must be a positive integer, got {concurrency!r}")
    if operator_token is not None and (
        not isinstance(operator_token, str) or not OPERATOR_TOKEN.fullmatch(operator_token)
    ):
        raise InvalidParameter("operator_token must be the token text (printable ASCII)")
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory(prefix="deniable-sim-") as scratch:
        # A throwaway device: the simulation never touches the real ledger or pins.
        store = StateStore(Path(scratch) / "state.bin", key=bytes(32))
        with client_factory(
            base_url,
            trusted_key=trusted_key,
            state=store,
            policy=SIMULATION_POLICY,
            **client_options,
        ) as client:
            verified = client.fetch(survey_id)
            survey = verified.survey
            path = f"/api/v1/surveys/{survey.id}/reports"
            if operator_token is None:
                batch_reports = len(survey.questions)  # one respondent per request
            else:
                path += "/bulk"
            local = threading.local()
            posters: list[SurveyClient] = []

            def post(body: bytes) -> None:
                # One connection per sender thread; same timeouts and retries as real answers.
                poster = getattr(local, "client", None)
                if poster is None:
                    poster = local.client = client_factory(
                        base_url,
                        trusted_key=trusted_key,
                        state=store,
                        policy=SIMULATION_POLICY,
                        **client_options,
                    )
                    posters.append(poster)
                response = poster._request("POST", path, body, authorization=operator_token)
                if response.status_code not in (200, 201):
                    raise poster._http_error("POST", path, response)

            bar = Progress(respondents, "respondents", progress)
            start = time.perf_counter()
            done = reports = 0
            in_flight: dict[Future[None], int] = {}
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                try:
                    for size in batches(survey, respondents, batch_reports):
                        truths = {
                            q.id: true_answers(q, size, distribution, rng) for q in survey.questions
                        }
                        walked = path_columns(survey, truths, decline_rate=decline_rate, rng=rng)
                        columns = []
                        for question in survey.questions:
                            oracle = question.oracle
                            randomized = oracle.randomize_many(walked[question.id], rng)
                            columns.append(oracle.encode_many(randomized))
                        items = [
                            {"id": str(uuid.uuid4()), "question": q.id, "payload": column[row]}
                            for row in range(size)
                            for q, column in zip(survey.questions, columns, strict=True)
                        ]
                        body: dict[str, Any] = {"reports": items}  # one respondent
                        if operator_token is not None:  # the bulk route: one group per respondent
                            per = len(survey.questions)
                            groups = [items[i : i + per] for i in range(0, len(items), per)]
                            body = {"respondents": [{"reports": g} for g in groups]}
                        in_flight[pool.submit(post, _dumps(body))] = size
                        reports += len(items)
                        while len(in_flight) >= 2 * concurrency:
                            done += _collect(in_flight, FIRST_COMPLETED)
                            bar.update(done)
                    while in_flight:
                        done += _collect(in_flight, FIRST_COMPLETED)
                        bar.update(done)
                finally:
                    for future in in_flight:
                        future.cancel()
                    for poster in posters:
                        poster.close()
            seconds = time.perf_counter() - start
            bar.update(done, final=True)
    return SimulationResult(respondents=done, reports=reports, seconds=seconds)


def _collect(in_flight: dict[Future[None], int], when: str) -> int:
    """Wait for some sends; the respondents they carried (re-raises a failed send)."""
    finished, _ = wait(list(in_flight), return_when=when)
    count = 0
    for future in finished:
        count += in_flight.pop(future)
        future.result()
    return count


def _dumps(data: object) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode("utf-8")
