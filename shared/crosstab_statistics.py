"""Crosstab sufficient statistics: each report's scores per category, and their joint sums.

Every mechanism a crosstab can use gives each report a row of integer *scores* z (one
per category, an :class:`Axis`) from which the per-report estimate

    ê(x) = (z_x - offset) / slope

is unbiased for the respondent's indicator 1[answer = x] (formula sheet, "Joint
answers"; Wang, Blocki, Li, Jha, USENIX Security 2017, for pure oracles):

* a pure frequency oracle: z_x = 1[x ∈ S(y)], offset q*, slope p* - q*;
* option sampling: z_x = +1 for the report (x, 1), -1 for (x, 0), else 0,
  offset -(2p-1)/m, slope 2(2p-1)/m (``deniable.mechanisms.option_sampling``);
* one binary RR per option (multiple choice): z_x = the option's bit;
* a numeric mechanism (one column): the report's integer z, whose affine image
  ``estimate([z], 1)`` is unbiased for the respondent's number;
* a number that may go unanswered (``DuchiStatus``: a GRR status and a Duchi sign,
  independent coins): column 0 the sign z, with ê_0 = step z unbiased for
  (value - midpoint) when answered and for 0 otherwise (the sign is then a fair coin),
  then one column per status (answered, then the extras) with GRR's support indicators.
  Offsets and slopes are then per column.

(n, Σ z_A, Σ z_B, Σ z_A z_Bᵀ) of the respondents who answered both questions are
integers and additive over respondents: :class:`CrosstabStatistics` folds incrementally
like the per-question statistics.  The estimators are in ``deniable.crosstab``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import InvalidParameter
from .intervals import ScoreModel, score_model
from .mechanisms.base import FrequencyOracle, Mechanism

__all__ = [
    "CHUNK",
    "Axis",
    "CrosstabStatistics",
    "StatusAxis",
    "axis",
    "crosstab_statistics",
    "decode_stored",
    "join_submissions",
    "linear_range",
    "numeric_extent",
    "support_rows",
    "wire_crosstab_statistics",
]

CHUNK = 1 << 16


# -- scores: what one report says about each category -------------------------------------------


def support_rows(oracle: FrequencyOracle, batch: np.ndarray) -> np.ndarray:
    """1[x ∈ S(y_i)] for every report i and value x: an (n, d) int8 array.

    Each oracle knows its support set (``FrequencyOracle.support_rows``); summed over
    reports it is ``oracle.support_counts(batch)`` (a test checks it for every oracle).
    """
    return oracle.support_rows(batch)


@dataclass(frozen=True, kw_only=True)
class Axis:
    """One question's per-report estimates as (score - offset) / slope; see the module docstring.

    ``model`` is the per-category score model of ``deniable.estimation`` (its
    variance gives E[ê²]); ``low``/``high`` bound a score.  A numeric axis has
    one column and estimates the respondent's number minus ``origin``.
    """

    mechanism: Any
    size: int
    offset: Any  # a float, or one per column (a status axis)
    slope: Any
    low: float
    high: float
    numeric: bool = False
    origin: float = 0.0
    span: float = 1.0
    model: ScoreModel | None = None

    def scores(self, batch: np.ndarray) -> np.ndarray:
        """(n, size) scores of a decoded batch (the mechanism's ``report_scores``)."""
        return self.mechanism.report_scores(batch)

    @property
    def second_moments(self) -> tuple[float, float]:
        """(m0, m1): E[ê(x)²] for a respondent without, and with, category x."""
        model = self.model
        m0 = model.c0 / model.slope**2
        m1 = (model.c0 + model.c1) / model.slope**2 + 1.0
        return m0, m1

    @property
    def range(self) -> tuple[float, float]:
        """Smallest and largest value a per-report estimate ê can take."""
        return (self.low - self.offset) / self.slope, (self.high - self.offset) / self.slope


@dataclass(frozen=True, kw_only=True)
class StatusAxis(Axis):
    """A number that may go unanswered: column 0 its sign, then one column per status."""

    def scores(self, batch: np.ndarray) -> np.ndarray:
        rows = np.asarray(batch, dtype=np.int64).reshape(-1, 2)
        scores = np.zeros((len(rows), self.size), dtype=np.int64)
        scores[:, 0] = rows[:, 1]
        scores[np.arange(len(rows)), 1 + rows[:, 0]] = 1
        return scores

    @property
    def statuses(self) -> int:
        return self.size - 1


def status_axis(mechanism: Any) -> StatusAxis:
    """The :class:`StatusAxis` of a ``DuchiStatus`` mechanism (module docstring)."""
    sign, status = mechanism.sign_oracle, mechanism.status_oracle
    middle = float(sign.estimate(np.array([0]), 1)[0])
    step = float(sign.estimate(np.array([1]), 1)[0]) - middle
    p, q = status.p_star, status.q_star
    k = mechanism.statuses
    return StatusAxis(
        mechanism=mechanism,
        size=1 + k,
        offset=np.array([0.0] + [q] * k),
        slope=np.array([1.0 / step] + [p - q] * k),
        low=-1,
        high=1,
        numeric=True,
        origin=mechanism.lo,
        span=mechanism.hi - mechanism.lo,
    )


def axis(mechanism: Mechanism) -> Axis:
    """The :class:`Axis` of a question's mechanism (``Question.oracle``), or InvalidParameter."""
    if not isinstance(mechanism, Mechanism):
        raise InvalidParameter(f"no crosstab for {type(mechanism).__name__} reports")
    if mechanism.kind == "numeric_status":
        return status_axis(mechanism)
    if mechanism.kind == "numeric":
        origin = float(mechanism.estimate(np.array([0]), 1)[0])
        step = float(mechanism.estimate(np.array([1]), 1)[0]) - origin
        # value - lo = (origin - lo) + step z = (z - offset) / slope
        bounded = mechanism.bounded_reports  # Duchi: ±1; additive noise is unbounded
        return Axis(
            mechanism=mechanism,
            size=1,
            offset=-(origin - mechanism.lo) / step,
            slope=1.0 / step,
            low=-1 if bounded else -np.inf,
            high=1 if bounded else np.inf,
            numeric=True,
            origin=mechanism.lo,
            span=mechanism.hi - mechanism.lo,
        )
    offset, slope, low, high = mechanism.score_line  # InvalidParameter: no crosstab
    return Axis(
        mechanism=mechanism,
        size=mechanism.categories,
        offset=offset,
        slope=slope,
        low=low,
        high=high,
        model=score_model(mechanism.per_category),
    )


def numeric_extent(numeric: Axis) -> tuple[float, float | None, float | None]:
    """(bound on E[w²], smallest w, largest w) of a numeric axis's w = value - lo.

    E[w²] = Var w + (E w)² <= variance_bound(1) + span²; the range is None when
    reports are unbounded (discrete Laplace: no Bernstein).
    """
    second = numeric.mechanism.variance_bound(1) + numeric.span**2
    low, high = numeric.range
    if not (np.isfinite(low) and np.isfinite(high)):
        return second, None, None
    return second, min(low, high), max(low, high)


# -- sufficient statistics -----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CrosstabStatistics:
    """n respondents, their score sums per row and column category, and the co-score matrix."""

    n: int
    rows: np.ndarray
    columns: np.ndarray
    joint: np.ndarray

    @classmethod
    def zeros(cls, rows: int, columns: int) -> CrosstabStatistics:
        return cls(
            n=0,
            rows=np.zeros(rows, np.int64),
            columns=np.zeros(columns, np.int64),
            joint=np.zeros((rows, columns), np.int64),
        )

    def __add__(self, other: CrosstabStatistics) -> CrosstabStatistics:
        return CrosstabStatistics(
            n=self.n + other.n,
            rows=self.rows + other.rows,
            columns=self.columns + other.columns,
            joint=self.joint + other.joint,
        )

    def transposed(self) -> CrosstabStatistics:
        """The same statistics with rows and columns swapped."""
        return CrosstabStatistics(
            n=self.n, rows=self.columns, columns=self.rows, joint=self.joint.T.copy()
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "rows": self.rows.tolist(),
            "columns": self.columns.tolist(),
            "joint": self.joint.tolist(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CrosstabStatistics:
        rows = np.asarray(data["rows"], dtype=np.int64)
        columns = np.asarray(data["columns"], dtype=np.int64)
        joint = np.asarray(data["joint"], dtype=np.int64).reshape(rows.size, columns.size)
        return cls(n=int(data["n"]), rows=rows, columns=columns, joint=joint)


def crosstab_statistics(
    rows: Axis, columns: Axis, row_batch: np.ndarray, column_batch: np.ndarray
) -> CrosstabStatistics:
    """Statistics of aligned decoded batches (row i of both is one respondent)."""
    n = len(row_batch)
    if len(column_batch) != n:
        raise InvalidParameter("a crosstab needs both questions' reports of the same respondents")
    total = CrosstabStatistics.zeros(rows.size, columns.size)
    for start in range(0, n, CHUNK):
        a = rows.scores(row_batch[start : start + CHUNK])
        b = columns.scores(column_batch[start : start + CHUNK])
        if rows.mechanism.direct_encoding and columns.mechanism.direct_encoding:
            # one-hot rows: the co-support matrix is a 2-d histogram
            cells = np.asarray(row_batch[start : start + CHUNK], np.int64) * columns.size
            cells += np.asarray(column_batch[start : start + CHUNK], np.int64)
            joint = np.bincount(cells, minlength=rows.size * columns.size)
            joint = joint.reshape(rows.size, columns.size)
        elif rows.numeric or columns.numeric:  # integer sums that may exceed float precision
            joint = a.astype(np.int64).T @ b.astype(np.int64)
        else:  # exact: every entry is an integer below 2**53
            joint = np.rint(a.astype(np.float64).T @ b.astype(np.float64)).astype(np.int64)
        total = total + CrosstabStatistics(
            n=len(a),
            rows=a.sum(axis=0, dtype=np.int64),
            columns=b.sum(axis=0, dtype=np.int64),
            joint=joint.astype(np.int64),
        )
    return total


def wire_crosstab_statistics(
    rows: Axis, columns: Axis, row_payloads: list[str], column_payloads: list[str]
) -> CrosstabStatistics:
    """Statistics from aligned encoded reports, decoded strictly."""
    if not row_payloads:
        return CrosstabStatistics.zeros(rows.size, columns.size)
    return crosstab_statistics(
        rows,
        columns,
        rows.mechanism.decode_many(row_payloads),
        columns.mechanism.decode_many(column_payloads),
    )


def decode_stored(mechanism: Any, text: str) -> np.ndarray:
    """Stored reports concatenated into one hex text (each ``report_length`` long), decoded.

    The aggregator's fast path for reports it validated at ingest: one
    ``bytes.fromhex`` and the mechanism's strict unpacking (out-of-domain values
    still raise InvalidReport), no Python work per report.
    """
    width = mechanism.report_length
    if len(text) % width:
        raise InvalidParameter(f"stored reports are not {width}-character hex texts")
    data = np.frombuffer(bytes.fromhex(text), dtype=np.uint8)
    return mechanism._unpack_many(data.reshape(len(text) // width, mechanism.report_bytes))


def join_submissions(
    first: Axis,
    second: Axis,
    first_keys: np.ndarray,
    first_batch: np.ndarray,
    second_keys: np.ndarray,
    second_batch: np.ndarray,
) -> CrosstabStatistics:
    """Statistics of the submissions present on both sides (keys: one per report, unique)."""
    _, left, right = np.intersect1d(
        np.asarray(first_keys, np.int64),
        np.asarray(second_keys, np.int64),
        assume_unique=True,
        return_indices=True,
    )
    return crosstab_statistics(first, second, first_batch[left], second_batch[right])


def linear_range(axis_: Axis, weights: Any) -> tuple[float, float]:
    """Smallest and largest value of Σ_c w_c ê_c over every report an axis can receive.

    A one-hot report (direct encoding: exactly one z_c is 1, the rest 0) gives
    Σ w ê = (w_reported - offset Σ w)/slope; a status axis adds its sign column's
    w_0 step z_0, z_0 = ±1; any other report is bounded column by column (each
    z_c in [low, high]), which is valid and wider.
    """
    weights = np.asarray(weights, dtype=np.float64)
    if isinstance(axis_, StatusAxis):
        step = 1.0 / float(axis_.slope[0])
        sign = abs(weights[0] * step)
        rest = weights[1:]
        offset, slope = float(axis_.offset[1]), float(axis_.slope[1])
        ends = [
            (rest.min() - offset * rest.sum()) / slope,
            (rest.max() - offset * rest.sum()) / slope,
        ]
        return min(ends) - sign, max(ends) + sign
    if axis_.mechanism.direct_encoding:
        ends = [
            (weights.min() - axis_.offset * weights.sum()) / axis_.slope,
            (weights.max() - axis_.offset * weights.sum()) / axis_.slope,
        ]
        return min(ends), max(ends)
    first, last = axis_.range
    low = np.minimum(weights * first, weights * last).sum()
    high = np.maximum(weights * first, weights * last).sum()
    return float(low), float(high)
