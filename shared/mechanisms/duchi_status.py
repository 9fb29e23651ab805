"""A number that may go unanswered: a status by GRR and a sign by Duchi et al., tightly composed.

An optional or conditional numeric question (docs/protocol.md §5.5) has k = 1 + e
statuses: 0 = answered, then its extras (declined, not applicable).  The report is
(status', sign): status' is generalized randomized response over the k statuses
(Kairouz, Oh, Viswanath 2014; Wang, Blocki, Li, Jha 2017) and the sign is Duchi,
Jordan, Wainwright's one-bit report (FOCS 2013) of the value when answered, a fair
coin (the midpoint, t = 0) otherwise.  Both run at the *part ε*

    a = ln((sqrt(1 + 8 e^ε) - 1) / 2),   i.e.   e^a (e^a + 1) / 2 = e^ε.

Privacy.  Answers differ only in the sign: ratio <= e^a.  Two non-responses differ
only in the status: e^a.  An answer against a non-response: the status ratio is at
most e^a and the sign ratio at most P[-1 | coin] / P[-1 | t = +1] = (e^a + 1)/2, so
the worst log-ratio over every pair of true answers, non-response included, is
a + ln((e^a + 1)/2) = ε exactly (attained: the non-response's status reported, sign
-1, against an answer at the top of the range).  Splitting ε/2 + ε/2 would be
private too but waste budget (its worst case is ε/2 + ln((e^{ε/2}+1)/2) < ε).
With realised thresholds ``epsilon_implemented`` is this maximum on the exact integer
probabilities.

Estimation.  A non-response's sign is a fair coin with mean 0, so B Σ sign is
unbiased for Σ t over those who answered; the status counts estimate each status's
share with GRR's estimator (``deniable.nonresponse`` forms the ratios).

Wire: two bytes, the reported status then the sign (``00`` -1, ``01`` +1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..errors import InvalidParameter, InvalidReport, InvalidValue
from ..lazy import np
from ..parameters import check_epsilon, check_range
from ..randomness import RESOLUTION, RngLike, as_source
from .base import Mechanism, check_number, log_ratio, probability_of
from .duchi import Duchi
from .grr import GRR

__all__ = ["COIN", "DuchiStatus", "part_epsilon"]

# The sign's threshold for a non-response: t = 0, a fair coin, exactly.
COIN = RESOLUTION // 2


def part_epsilon(epsilon: float) -> float:
    """a with e^a (e^a + 1)/2 = e^ε: the status and the sign each run at a (docs/protocol.md
    §5.5), so that the whole answer, non-response included, costs exactly ε."""
    return math.log((math.sqrt(1 + 8 * math.exp(epsilon)) - 1) / 2)


@dataclass(frozen=True, kw_only=True)
class DuchiStatus(Mechanism):
    """Duchi's sign of a number on ``[lo, hi]`` with a GRR status over 1 + ``extras`` values.

    A true value is ``(0, x)`` (answered x) or ``(j, None)`` (the j-th extra, j >= 1);
    a report is ``(status, sign)``.
    """

    epsilon: float
    lo: float
    hi: float
    extras: int

    name: ClassVar[str] = Duchi.name
    display_name: ClassVar[str] = Duchi.display_name + " with a randomized answer status"
    browser_module: ClassVar[str] = "duchi.js"
    # duchi.js's DuchiStatus draws its GRR status itself (grr.js's two draws): no import.
    browser_imports: ClassVar[tuple[str, ...]] = ()
    kind: ClassVar[str] = "numeric_status"
    batch_dtype: ClassVar[str] = "int64"

    sign_oracle: Duchi = field(init=False, repr=False, compare=False, default=None)  # type: ignore[assignment]
    status_oracle: GRR = field(init=False, repr=False, compare=False, default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self._set("epsilon", check_epsilon(self.epsilon))
        lo, hi = check_range(self.lo, self.hi)
        self._set("lo", lo)
        self._set("hi", hi)
        if self.extras not in (1, 2):
            raise InvalidParameter(f"extras must be 1 or 2, got {self.extras!r}")
        part = part_epsilon(self.epsilon)
        self._set("sign_oracle", Duchi(epsilon=part, lo=lo, hi=hi))
        self._set("status_oracle", GRR(epsilon=part, domain_size=1 + self.extras))

    # -- what it is ---------------------------------------------------------------
    @property
    def statuses(self) -> int:
        return 1 + self.extras

    @property
    def part_epsilon(self) -> float:
        return self.sign_oracle.epsilon

    @property
    def report_bytes(self) -> int:
        return 2

    @property
    def statistics_size(self) -> int:
        return 1 + self.statuses

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "lo": self.lo, "hi": self.hi, "extras": self.extras}

    def resolved_parameters(self) -> dict[str, Any]:
        return {
            **self.sign_oracle.resolved_parameters(),
            **self.status_oracle.resolved_parameters(),
        }

    def adopt_probabilities(self, values: dict[str, Any]) -> None:
        sign = {k: v for k, v in values.items() if k in ("low", "high", "slope")}
        if sign:
            self.sign_oracle.adopt_probabilities(sign)
        if "keep" in values:
            self.status_oracle.adopt_probabilities({"keep": values["keep"]})

    @property
    def epsilon_implemented(self) -> float:
        """The worst log-ratio of the joint law over every pair of true values (module doc)."""
        low, high = self.sign_oracle._low, self.sign_oracle._high
        answers = self.sign_oracle.epsilon_implemented
        # The sign of an answer (threshold in [low, high]) against the coin's R/2, both signs.
        against_coin = max(
            abs(log_ratio(2 * low, RESOLUTION)),
            abs(log_ratio(2 * high, RESOLUTION)),
            abs(log_ratio(2 * (RESOLUTION - low), RESOLUTION)),
            abs(log_ratio(2 * (RESOLUTION - high), RESOLUTION)),
        )
        status = self.status_oracle.epsilon_implemented
        return max(answers, status + against_coin)

    # -- crosstabs: by status and sign (deniable.crosstab_statistics.StatusAxis) ---------
    @property
    def score_line(self) -> tuple[float, float, float, float]:
        raise InvalidParameter(
            "an optional or conditional number has no per-category scores: its crosstab is a "
            "mean among those who answered, by status and sign"
        )

    def score_model(self) -> Any:
        return self.score_line  # raises the same plain reason

    # -- the device path ------------------------------------------------------------
    def check_value(self, value: object) -> tuple[int, float | None]:
        if isinstance(value, tuple) and len(value) == 2:
            status, number = value
            if status == 0 and type(status) is int:
                return 0, check_number(number, self.lo, self.hi)
            if type(status) is int and 1 <= status <= self.extras and number is None:
                return status, None
        raise InvalidValue(
            f"value must be (0, a number in [{self.lo}, {self.hi}]) or (j, None) for "
            f"1 <= j <= {self.extras}, got {value!r}"
        )

    def _sign_threshold(self, status: int, number: float | None) -> int:
        return self.sign_oracle._threshold(number) if status == 0 else COIN

    def randomize(self, value: object, rng: RngLike = None) -> tuple[int, int]:
        """(reported status, sign): the status by GRR first, then the sign (docs/protocol.md
        §5.5), from the CSPRNG unless ``rng`` is given."""
        status, number = self.check_value(value)
        source = as_source(rng)
        reported = self.status_oracle.randomize(status, source)
        sign = 1 if source.uniform53() < self._sign_threshold(status, number) else -1
        return reported, sign

    def encode(self, report: Any) -> str:
        if not isinstance(report, tuple | list) or len(report) != 2:
            raise InvalidReport("a report is (status, sign)")
        status, sign = report
        if type(status) is not int or not 0 <= status < self.statuses or sign not in (1, -1):
            raise InvalidReport(f"status must be in [0, {self.statuses}) and sign ±1")
        return f"{status:02x}{'01' if sign == 1 else '00'}"

    def output_reports(self) -> tuple[str, ...]:
        """The 2k reports (status, sign), status-major: (0, -1), (0, +1), (1, -1), ...

        Every status, the non-responses' included, with both signs: a relay that adds
        dummies must add them to every report a respondent can send, or moving one
        respondent's report into a value without dummies would be seen exactly
        (docs/relay.md, "Optional, conditional and scale questions").  Each status is
        carried by two of these and each sign by k, which is how the dummies reach the
        status and sign estimates (:meth:`deniable.noised.DummyNoise.repeated`)."""
        return tuple(self.encode((s, sign)) for s in range(self.statuses) for sign in (-1, 1))

    # -- the batch path ---------------------------------------------------------------
    @property
    def batch_columns(self) -> int:
        return 2

    def randomize_many(self, values: Any, rng: np.random.Generator) -> np.ndarray:
        """``values``: (n, 2) rows (status, number); the number is ignored unless status 0."""
        rows = np.asarray(values, dtype=np.float64).reshape(-1, 2)
        status = rows[:, 0].astype(np.int64)
        numbers = np.where(status == 0, rows[:, 1], (self.lo + self.hi) / 2)
        numbers = np.clip(numbers, self.lo, self.hi)
        reported = self.status_oracle.randomize_many(status, rng)
        t = np.clip(2 * ((numbers - self.lo) / (self.hi - self.lo)) - 1, -1.0, 1.0)
        t = np.where(status == 0, t, 0.0)
        plus = rng.random(len(rows)) < 0.5 + t * self.sign_oracle._slope
        return np.stack([reported, np.where(plus, 1, -1)], axis=1).astype(np.int64)

    def statistics(self, batch: np.ndarray) -> np.ndarray:
        """[Σ sign, C_0, ..., C_{k-1}]: the signs' total and the status support counts."""
        rows = np.asarray(batch, dtype=np.int64).reshape(-1, 2)
        counts = np.bincount(rows[:, 0], minlength=self.statuses)[: self.statuses]
        return np.concatenate([[int(rows[:, 1].sum())], counts]).astype(np.int64)

    def _pack_many(self, batch: np.ndarray) -> np.ndarray:
        rows = np.asarray(batch, dtype=np.int64).reshape(-1, 2)
        if rows.size and (
            rows[:, 0].min() < 0
            or rows[:, 0].max() >= self.statuses
            or not np.all(np.abs(rows[:, 1]) == 1)
        ):
            raise InvalidReport("reports are (status, ±1)")
        return np.stack([rows[:, 0], rows[:, 1] > 0], axis=1).astype(np.uint8)

    def _unpack_many(self, data: np.ndarray) -> np.ndarray:
        if data.size and (data[:, 0].max() >= self.statuses or data[:, 1].max() > 1):
            raise InvalidReport(
                f"a report is a status byte below {self.statuses:02x} and a sign byte 00 or 01"
            )
        return np.stack([data[:, 0].astype(np.int64), 2 * data[:, 1].astype(np.int64) - 1], axis=1)

    def unstack(self, batch: np.ndarray) -> list[Any]:
        return [tuple(row) for row in np.asarray(batch).tolist()]

    def report_distribution(self, value: object) -> dict[str, float]:
        status, number = self.check_value(value)
        plus = probability_of(self._sign_threshold(status, number))
        result = {}
        for reported, p_status in self.status_oracle.report_distribution(status).items():
            result[f"{reported}01"] = p_status * plus
            result[f"{reported}00"] = p_status * (1.0 - plus)
        return result

    def exact_distribution(self, value: object) -> dict[str, Any]:
        """The same law as exact fractions of integers (for exact privacy checks)."""
        from fractions import Fraction

        status, number = self.check_value(value)
        keep = self.status_oracle._keep
        plus = Fraction(self._sign_threshold(status, number), RESOLUTION)
        result = {}
        for reported in range(self.statuses):
            p = (
                Fraction(keep, RESOLUTION)
                if reported == status
                else Fraction(RESOLUTION - keep, RESOLUTION * (self.statuses - 1))
            )
            result[f"{reported:02x}01"] = p * plus
            result[f"{reported:02x}00"] = p * (1 - plus)
        return result
