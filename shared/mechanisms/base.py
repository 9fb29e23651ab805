"""What every mechanism is, and the estimator written once for all pure oracles.

A *pure* frequency oracle (Wang, Blocki, Li, Jha, "Locally Differentially
Private Protocols for Frequency Estimation", USENIX Security 2017) is fully
described by its report y, its support set S(y), and two probabilities::

    p* = P[v in S(y) | x = v]        q* = P[v in S(y) | x != v]

With C_v the number of the n reports whose support contains v:

    estimate     f_v = (C_v / n - q*) / (p* - q*)                   (unbiased)
    variance     [f_v p*(1-p*) + (1-f_v) q*(1-q*)] / (n (p*-q*)^2)   (exact)
    bound        max(p*(1-p*), q*(1-q*)) / (n (p*-q*)^2)             (every f_v)

so each oracle only supplies p*, q*, ``randomize`` (one report, CSPRNG),
``randomize_many`` (vectorized simulation), the packing of its report into a
fixed number of bytes, and ``statistics`` (support counts, vectorized).

Reports travel as lowercase hex strings of exactly ``2 * report_bytes``
characters (docs/wire-format.md): the size never depends on the true value.

Two paths, one module per mechanism: the device path (``check_value``,
``randomize``, ``encode``) is pure Python on the CSPRNG and never imports
numpy; the batch path (``randomize_many``, ``decode_many``, ``statistics``)
is vectorized with numpy, imported on first use (:mod:`deniable.lazy`).
Both encode a report to the same bytes (tests/shared/test_device_path.py).
"""

from __future__ import annotations

import math
import operator
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import InvalidParameter, InvalidReport, InvalidValue
from ..lazy import np, numpy_type
from ..parameters import MAX_DOMAIN_SIZE, check_domain_size, check_epsilon, check_range
from ..randomness import RESOLUTION, RngLike

if TYPE_CHECKING:  # the intervals need numpy; a device never builds a score model
    from ..intervals import ScoreModel

__all__ = [
    "FALSE_REJECTION",
    "FrequencyOracle",
    "Mechanism",
    "NumericMechanism",
    "check_categories",
    "check_numbers",
    "integer_rows",
    "log_ratio",
    "pack_uints",
    "probability_of",
    "report_int",
    "threshold_of",
    "unpack_uints",
    "width_bytes",
]

# Wire statistics decode about this many characters of hex text at a time.
_CHUNK_TEXT = 1 << 20

# Above this many outputs an exact distribution is not something to enumerate.
MAX_ENUMERATED_OUTPUTS = 1 << 16

# Poisoning guards may reject a report only if an honest client produces such a
# report with at most this probability (docs/threat-model.md).
FALSE_REJECTION = 1e-9


def log_ratio(numerator: int, denominator: int) -> float:
    """log(numerator / denominator) for positive integers, accurate to an ulp of the result.

    ``log1p`` of the exact fraction avoids the cancellation that ``log(a) - log(b)``
    or ``log(a / b)`` suffer when the ratio is near one (small ε).
    """
    return math.log1p(Fraction(numerator - denominator, denominator))


def width_bytes(upper: int) -> int:
    """Bytes needed to hold every integer in ``[0, upper)``, at least one."""
    return max(1, ((upper - 1).bit_length() + 7) // 8)


def pack_uints(values: np.ndarray, width: int) -> np.ndarray:
    """Unsigned integers as big-endian rows of ``width`` bytes: shape (n, width)."""
    values = np.asarray(values, dtype=np.uint64)
    shifts = np.arange(width - 1, -1, -1, dtype=np.uint64) * np.uint64(8)
    return ((values[:, None] >> shifts) & np.uint64(0xFF)).astype(np.uint8)


def unpack_uints(data: np.ndarray) -> np.ndarray:
    """The inverse of :func:`pack_uints`: rows of big-endian bytes to int64."""
    width = data.shape[1]
    if width in (1, 2, 4):  # one view of the bytes as big-endian integers
        words = np.ascontiguousarray(data).view(f">u{width}")
        return words.reshape(data.shape[0]).astype(np.int64)
    result = np.zeros(data.shape[0], dtype=np.int64)
    for column in range(data.shape[1]):
        result = (result << 8) | data[:, column].astype(np.int64)
    return result


def report_int(value: object, upper: int, what: str) -> int:
    """One integer of a Python-level report, checked to lie in ``[0, upper)`` (InvalidReport)."""
    if type(value) is not int:
        try:
            value = operator.index(value)
        except TypeError:
            raise InvalidReport(f"{what} must be an int, got {type(value).__name__}") from None
    if not 0 <= value < upper:
        raise InvalidReport(f"{what} must be in [0, {upper}), got {value}")
    return value


def integer_rows(batch: object, columns: int, expected: str) -> np.ndarray:
    """``batch`` as int64 rows of ``columns`` integers; InvalidReport saying ``expected``."""
    array = np.asarray(batch)
    if array.ndim != 2 or array.shape[1] != columns or not np.issubdtype(array.dtype, np.integer):
        raise InvalidReport(f"{expected}, got {array.dtype} {array.shape}")
    return array.astype(np.int64, copy=False)


def check_category(value: object, domain_size: int) -> int:
    """A respondent's categorical answer as an int in ``[0, domain_size)``, or InvalidValue."""
    if type(value) is int:  # the device path: no numpy scalar types to consider
        if 0 <= value < domain_size:
            return value
    elif isinstance(value, bool) or not (isinstance(value, int) or numpy_type(value, "integer")):
        raise InvalidValue(
            f"value must be an int in [0, {domain_size}), got {type(value).__name__} {value!r}"
        )
    if not 0 <= value < domain_size:
        raise InvalidValue(f"value must be in [0, {domain_size}), got {value!r}")
    return int(value)


def check_categories(values: object, domain_size: int) -> np.ndarray:
    """The vectorized twin of :func:`check_category` for the simulation path."""
    array = np.asarray(values)
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise InvalidValue(f"values must be a 1-d integer array, got {array.dtype} {array.shape}")
    if array.size and (array.min() < 0 or array.max() >= domain_size):
        raise InvalidValue(f"values must lie in [0, {domain_size})")
    return array.astype(np.int64, copy=False)


class Mechanism(ABC):
    """Common surface of categorical oracles and numeric mechanisms.

    Subclasses are frozen, keyword-only dataclasses validated in ``__post_init__``.
    """

    name: ClassVar[str]
    kind: ClassVar[str]  # "categorical", "numeric" or "multiple" (a set of options)
    epsilon: float

    # -- what the mechanism is, beyond its wire name ----------------------------
    # Plain words for people (the dashboard shows them beside the wire name).
    display_name: ClassVar[str]
    # Its twin in the browser client (client/browser/), and the other mechanism modules that
    # twin imports; mechanism.js, the shared base, is always loaded (:meth:`browser_files`).
    browser_module: ClassVar[str]
    browser_imports: ClassVar[tuple[str, ...]] = ()
    # Resolved parameters a signed definition passes to the constructor; every other resolved
    # parameter is derived, or is a signed probability (deniable.resolution).
    constructor_keywords: ClassVar[tuple[str, ...]] = ()
    # Direct encoding (Wang et al. 2017, "DE"): a report is one value, S(y) = {y}, so the true
    # answer is reported with probability p* and otherwise one other answer at random.
    direct_encoding: ClassVar[bool] = False

    def _set(self, name: str, value: Any) -> None:
        # Frozen dataclasses cache derived parameters through object.__setattr__.
        object.__setattr__(self, name, value)

    @classmethod
    def browser_files(cls) -> tuple[str, ...]:
        """The browser modules a page loads for this mechanism, its imports first."""
        return ("mechanism.js", *cls.browser_imports, cls.browser_module)

    # -- signed parameters (deniable.resolution) ---------------------------------
    def resolved_parameters(self) -> dict[str, Any]:
        """The parameters a ``deniable.survey/2`` definition signs for this mechanism: its
        structural integers and every probability as an integer threshold out of 2**53."""
        raise InvalidParameter(f"no resolved parameters defined for mechanism {self.name!r}")

    def adopt_probabilities(self, values: dict[str, Any]) -> None:
        """Use the signed probabilities ``values`` (checked by deniable.resolution, keys among
        :meth:`resolved_parameters`) instead of the ones derived from ε."""
        if "keep" in values:
            self._set("_keep", values["keep"])

    def implied_epsilons(self) -> list[tuple[str, float, float]]:
        """(name, implied ε, declared ε) for every layer of the signed probabilities."""
        return [("epsilon", self.epsilon_implemented, self.epsilon)]

    @property
    def statistics_size(self) -> int:
        """Length of :meth:`statistics` (one total for a numeric mechanism)."""
        return 1

    # -- crosstabs (deniable.crosstab) ---------------------------------------------
    @property
    def per_category(self) -> Mechanism:
        """The mechanism whose estimator each category (option) uses: itself by default."""
        return self

    @property
    def score_line(self) -> tuple[float, float, float, float]:
        """(offset, slope, low, high) of :meth:`report_scores` for a categorical or multiple
        choice mechanism: E[score] = offset + slope x for x = 1[the respondent holds the
        category], and every score lies in [low, high].  InvalidParameter if the mechanism
        has no crosstab."""
        raise InvalidParameter(f"no crosstab for {type(self).__name__} reports")

    def score_model(self) -> ScoreModel:
        """The :class:`~deniable.intervals.ScoreModel` of this mechanism's per-category
        estimator: the per-report score's mean line, variance and range, from which every
        interval family is built (docs/formulas.md)."""
        raise InvalidParameter(f"no interval model for {type(self).__name__}")

    def report_scores(self, batch: np.ndarray) -> np.ndarray:
        """(n, categories) integer scores of a decoded batch, one row per report, whose affine
        image (score - offset) / slope is an unbiased per-report estimate of each category;
        a numeric mechanism has one column, its integer report."""
        return np.asarray(batch, dtype=np.int64).reshape(-1, 1)

    def output_reports(self) -> tuple[str, ...] | None:
        """Every report this mechanism can send, encoded, in a fixed order; None when a report
        is not one value of a small set.

        A relay adding dummy reports (the augmented shuffle: Murakami, Sei and Eriguchi,
        arXiv 2504.07362) draws a count for each of these and sends that many copies, so only
        mechanisms that name their outputs can be noised this way (``deniable.dummies``).
        """
        return None

    # -- per mechanism --------------------------------------------------------
    @property
    @abstractmethod
    def report_bytes(self) -> int:
        """Size of one packed report; identical for every true value."""

    @property
    @abstractmethod
    def epsilon_implemented(self) -> float:
        """The ε of the probabilities the code actually samples with: the largest absolute
        log-ratio, so thresholds that favour the other values (the truth rarely kept) count too."""

    @abstractmethod
    def randomize(self, value: Any, rng: RngLike = None) -> Any:
        """One report from one true value, from the CSPRNG unless ``rng`` is given."""

    @abstractmethod
    def randomize_many(self, values: Any, rng: np.random.Generator) -> np.ndarray:
        """Reports for many true values at once (simulation path), as a batch array."""

    @abstractmethod
    def statistics(self, batch: np.ndarray) -> np.ndarray:
        """Additive sufficient statistics of a batch (summed across batches)."""

    @abstractmethod
    def report_distribution(self, value: Any) -> dict[str, float]:
        """Exact output distribution for one true value: encoded report -> probability."""

    @abstractmethod
    def _pack_many(self, batch: np.ndarray) -> np.ndarray:
        """A batch as uint8 rows of ``report_bytes``."""

    @abstractmethod
    def _unpack_many(self, data: np.ndarray) -> np.ndarray:
        """uint8 rows back to a batch; raise InvalidReport on anything out of domain."""

    @abstractmethod
    def parameters(self) -> dict[str, Any]:
        """The constructor keywords, JSON-friendly (rebuilds an equal mechanism)."""

    def implausible(self, batch: np.ndarray) -> np.ndarray:
        """Rows an honest client produces with probability <= FALSE_REJECTION (a guard).

        By default every decodable report is plausible; mechanisms whose reports
        carry checkable structure (unary encodings) override this.
        """
        return np.zeros(len(batch), dtype=bool)

    # -- batches of Python-level reports --------------------------------------
    batch_dtype: ClassVar[str] = "int64"  # a numpy dtype name (numpy is imported lazily)

    @property
    def batch_columns(self) -> int | None:
        """Columns of a batch row, or None when a batch holds one value per report."""
        return None

    def stack(self, reports: Sequence[Any]) -> np.ndarray:
        """Python-level reports (as ``randomize`` returns them) to a checked batch array."""
        rows = list(reports)
        if not rows:
            columns = self.batch_columns
            return np.zeros((0,) if columns is None else (0, columns), dtype=self.batch_dtype)
        return self._check_batch(np.asarray(rows))

    def _check_batch(self, batch: object) -> np.ndarray:
        """A batch array in this mechanism's shape and dtype (InvalidReport otherwise)."""
        return np.asarray(batch, dtype=self.batch_dtype)

    def unstack(self, batch: np.ndarray) -> list[Any]:
        """A batch array to Python-level reports."""
        rows = batch.tolist()
        return [tuple(row) if isinstance(row, list) else row for row in rows]

    # -- wire format, written once --------------------------------------------
    @property
    def report_length(self) -> int:
        """Characters in an encoded report."""
        return 2 * self.report_bytes

    def encode(self, report: Any) -> str:
        """One Python-level report as its wire text.

        Every mechanism overrides this with pure Python (the device path, no
        numpy); this vectorized fallback is the reference it must agree with.
        """
        return self.encode_many(self.stack([report]))[0]

    def decode(self, text: object) -> Any:
        return self.unstack(self.decode_many([text]))[0]

    def encode_many(self, batch: np.ndarray) -> list[str]:
        data = np.ascontiguousarray(self._pack_many(batch), dtype=np.uint8)
        text = data.tobytes().hex()
        width = self.report_length
        return [text[i : i + width] for i in range(0, len(text), width)]

    def decode_many(self, payloads: Sequence[object]) -> np.ndarray:
        """Strictly decode encoded reports; any bad one raises InvalidReport."""
        return self._unpack_many(self._payload_rows(payloads))

    def wire_statistics(self, payloads: Sequence[object]) -> np.ndarray:
        """``statistics(decode_many(payloads))`` without holding every decoded report.

        Payloads are decoded about a megabyte of text at a time, so each chunk
        stays in cache; a mechanism may count a chunk without unpacking it
        (``_rows_statistics``).  Every payload is checked as strictly as by
        :meth:`decode_many`.
        """
        payloads = payloads if isinstance(payloads, list | tuple) else list(payloads)
        rows = max(1, _CHUNK_TEXT // self.report_length)
        total = None
        for start in range(0, len(payloads), rows):
            data = self._payload_rows(payloads[start : start + rows], start)
            part = np.asarray(self._rows_statistics(data), dtype=np.int64)
            total = part if total is None else total + part
        if total is None:
            return np.asarray(self.statistics(self._unpack_many(self._payload_rows([]))), np.int64)
        return total

    def _rows_statistics(self, data: np.ndarray) -> np.ndarray:
        """Statistics of uint8 report rows (strictly checked); unpacks by default."""
        return self.statistics(self._unpack_many(data))

    def _payload_rows(self, payloads: Sequence[object], offset: int = 0) -> np.ndarray:
        """Payloads as uint8 rows of ``report_bytes``: one join, one ``bytes.fromhex``.

        No Python work per report: ``join`` refuses non-strings, the lengths are
        compared in C, and ``fromhex`` refuses any character but hex digits and
        whitespace; whitespace shortens the output and uppercase digits are
        searched for, so what passes is exactly lowercase hex of the right size.
        """
        width = self.report_length
        if not isinstance(payloads, list | tuple):
            payloads = list(payloads)  # read twice below
        try:
            text = "".join(payloads)  # type: ignore[arg-type]
            if (payloads and set(map(len, payloads)) != {width}) or any(
                digit in text for digit in "ABCDEF"
            ):
                raise ValueError
            data = bytes.fromhex(text)
            if len(data) != len(payloads) * self.report_bytes:
                raise ValueError
        except (TypeError, ValueError):
            raise self._first_bad_payload(payloads, offset) from None
        return np.frombuffer(data, dtype=np.uint8).reshape(len(payloads), self.report_bytes)

    def _first_bad_payload(self, payloads: Sequence[object], offset: int) -> InvalidReport:
        """The error naming the first bad payload (a failed batch only: one loop)."""
        width = self.report_length
        for index, payload in enumerate(payloads, start=offset):
            if not isinstance(payload, str):
                return InvalidReport(
                    f"report {index}: must be a string, got {type(payload).__name__}"
                )
            if len(payload) != width:
                return InvalidReport(
                    f"report {index}: must be {width} hex characters for {self.name}, "
                    f"got {len(payload)}"
                )
        return InvalidReport(f"reports must be lowercase hexadecimal ({self.name})")

    def spec(self) -> dict[str, Any]:
        return {"mechanism": self.name, **self.parameters()}

    def _check_enumerable(self, outputs: int) -> None:
        if outputs > MAX_ENUMERATED_OUTPUTS:
            raise InvalidParameter(
                f"{self.name} has {outputs} outputs here; exact distributions are for small domains"
            )


def probability_of(threshold_value: int) -> float:
    """The probability a threshold realises (see deniable.randomness)."""
    return threshold_value / RESOLUTION


def threshold_of(probability: float) -> int:
    """The integer threshold behind a realised probability ``threshold / 2**53`` (exact)."""
    value = probability * RESOLUTION
    if value != int(value):  # pragma: no cover - a mechanism not built on thresholds
        raise InvalidParameter(f"probability {probability!r} is not a multiple of 2**-53")
    return int(value)


@dataclass(frozen=True, kw_only=True)
class FrequencyOracle(Mechanism):
    """A pure frequency oracle over values ``0 .. domain_size - 1``."""

    epsilon: float
    domain_size: int

    kind: ClassVar[str] = "categorical"
    # Only for two categories (yes/no): a single-choice question needs exactly two options, and
    # the recommendation skips it (it is the d = 2 case of another oracle).
    binary: ClassVar[bool] = False

    def score_model(self) -> ScoreModel:
        from ..intervals import ScoreModel

        p, q = self.p_star, self.q_star
        # The support indicator is Bernoulli(p*) for holders of v, Bernoulli(q*) otherwise
        # (Wang, Blocki, Li, Jha 2017).
        return ScoreModel(
            slope=p - q,
            c0=q * (1 - q),
            c1=p * (1 - p) - q * (1 - q),
            deviation=max(p, 1 - p, q, 1 - q),
            tail=("pure", p, q),
        )

    @property
    @abstractmethod
    def p_star(self) -> float:
        """P[v in S(y) | x = v]."""

    @property
    @abstractmethod
    def q_star(self) -> float:
        """P[v in S(y) | x != v]."""

    @abstractmethod
    def support_counts(self, batch: np.ndarray) -> np.ndarray:
        """C_v for every v: how many reports in the batch support v (int64, length d)."""

    def statistics(self, batch: np.ndarray) -> np.ndarray:
        return self.support_counts(batch)

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "domain_size": self.domain_size}

    def resolved_parameters(self) -> dict[str, Any]:
        return {"keep": threshold_of(self.p_star)}

    # -- per report (crosstabs) ---------------------------------------------------
    def support_rows(self, batch: np.ndarray) -> np.ndarray:
        """1[x ∈ S(y_i)] for every report i and value x: an (n, d) int8 array.

        Summed over reports it is :meth:`support_counts` (a test checks it for every
        oracle).  This fallback counts one report at a time (correct, slow); oracles
        override it with their support set vectorized.
        """
        d = self.domain_size
        rows = [self.support_counts(batch[i : i + 1]) for i in range(len(batch))]
        return np.vstack(rows or [np.zeros((0, d))]).astype(np.int8)

    @property
    def categories(self) -> int:
        return self.domain_size

    @property
    def statistics_size(self) -> int:
        return self.domain_size

    @property
    def score_line(self) -> tuple[float, float, float, float]:
        p, q = self.p_star, self.q_star
        return q, p - q, 0, 1

    def report_scores(self, batch: np.ndarray) -> np.ndarray:
        """The support indicators: E = q* + (p* - q*) 1[x = v]."""
        return self.support_rows(batch)

    # -- the estimator, written once -------------------------------------------
    def estimate(self, counts: np.ndarray, n: int) -> np.ndarray:
        """Unbiased frequency estimates from support counts and the number of reports."""
        if n <= 0:
            raise InvalidParameter(f"n must be positive to estimate, got {n}")
        counts = np.asarray(counts, dtype=np.float64)
        return (counts / n - self.q_star) / (self.p_star - self.q_star)

    def variance(self, frequencies: np.ndarray, n: int) -> np.ndarray:
        """Exact variance of each estimate when the true frequencies are ``frequencies``."""
        f = np.asarray(frequencies, dtype=np.float64)
        p, q = self.p_star, self.q_star
        return (f * p * (1 - p) + (1 - f) * q * (1 - q)) / (n * (p - q) ** 2)

    def variance_bound(self, n: int) -> float:
        """A variance bound that holds for every true frequency (the variance is linear in f)."""
        p, q = self.p_star, self.q_star
        return max(p * (1 - p), q * (1 - q)) / (n * (p - q) ** 2)

    def approximate_variance(self, n: int) -> float:
        """The f_v = 0 variance that papers usually quote."""
        p, q = self.p_star, self.q_star
        return q * (1 - q) / (n * (p - q) ** 2)

    def check_value(self, value: object) -> int:
        return check_category(value, self.domain_size)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(
            self, "domain_size", check_domain_size(self.domain_size, self.max_domain_size)
        )
        self._prepare()

    max_domain_size: ClassVar[int] = MAX_DOMAIN_SIZE

    def _prepare(self) -> None:
        """Derive and cache sampling parameters (called once, after validation)."""


def check_number(value: object, lo: float, hi: float) -> float:
    """A respondent's numeric answer as a float in ``[lo, hi]``, or InvalidValue."""
    if isinstance(value, bool) or not (
        isinstance(value, int | float)
        or numpy_type(value, "integer")
        or numpy_type(value, "floating")
    ):
        raise InvalidValue(
            f"value must be a number in [{lo}, {hi}], got {type(value).__name__} {value!r}"
        )
    try:
        result = float(value)
    except OverflowError:
        raise InvalidValue(f"value must be in [{lo}, {hi}], got an integer too large") from None
    if not lo <= result <= hi or (isinstance(value, int) and result != value):
        # NaN fails the range; an integer that no double holds exactly would be rounded
        raise InvalidValue(f"value must be in [{lo}, {hi}], got {value!r}")
    return result


def check_numbers(values: object, lo: float, hi: float) -> np.ndarray:
    """The vectorized twin of :func:`check_number` for the simulation path."""
    array = np.asarray(values)
    if array.ndim != 1 or not (
        np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)
    ):
        raise InvalidValue(f"values must be a 1-d numeric array, got {array.dtype} {array.shape}")
    array = array.astype(np.float64)
    if array.size and not (np.all(array >= lo) and np.all(array <= hi)):
        raise InvalidValue(f"values must lie in [{lo}, {hi}] and not be NaN")
    return array


@dataclass(frozen=True, kw_only=True)
class NumericMechanism(Mechanism):
    """A mechanism for a number in ``[lo, hi]`` whose reports average to an unbiased mean.

    ``statistics`` is ``[total]`` in the mechanism's integer report units, so sums
    stay exact; ``estimate(statistics, n)`` returns ``[mean]`` in the units of
    ``lo``/``hi`` and ``variance_bound(n)`` bounds the variance of that mean for
    every population of values in ``[lo, hi]``.
    """

    def score_model(self) -> ScoreModel:
        from ..intervals import ScoreModel

        spread = self.hi - self.lo
        return ScoreModel(
            slope=1.0,
            c0=self.variance_bound(1) / spread**2,
            deviation=None,
            origin=self.lo,
            scale=spread,
        )

    epsilon: float
    lo: float
    hi: float

    kind: ClassVar[str] = "numeric"
    # Reports within [-1, 1] in their integer units (a Bernstein interval applies to a crosstab
    # cell); unbounded reports (additive noise) have none.
    bounded_reports: ClassVar[bool] = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        lo, hi = check_range(self.lo, self.hi)
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)
        self._prepare()

    def _prepare(self) -> None:
        """Derive and cache sampling parameters (called once, after validation)."""

    def check_value(self, value: object) -> float:
        return check_number(value, self.lo, self.hi)

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "lo": self.lo, "hi": self.hi}

    def statistics(self, batch: np.ndarray) -> np.ndarray:
        return np.array([int(np.asarray(batch, dtype=np.int64).sum())], dtype=np.int64)

    @abstractmethod
    def estimate(self, statistics: np.ndarray, n: int) -> np.ndarray:
        """``[mean]``: the unbiased estimate of the population mean."""

    @abstractmethod
    def variance_bound(self, n: int) -> float:
        """Variance of the mean estimate, bounded over every population in [lo, hi]."""
