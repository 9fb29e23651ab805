"""Option sampling: multiple choice at the full ε, one option per report.

Ye & Barg style sampling for set-valued answers; as used for frequent items
and set-valued data by Wang, Li, Jha, "Locally Differentially Private
Frequent Itemset Mining" (S&P 2018, the one-item case of padding-and-sampling)
and Qin et al., "Heavy Hitter Estimation over Set-Valued Data with Local
Differential Privacy" (CCS 2016); see the formula sheet, "Set-valued answers".

The true answer is a set A of the m options (a tuple of m bits).  The
respondent draws an option j uniformly from [m] (public and independent of the
answer) and reports (j, b) where b = [j in A] is kept with probability
p = e^ε / (1 + e^ε), else flipped.  For two answer sets A, A' and any report,
P[(j, b) | A] / P[(j, b) | A'] is 1 when A and A' agree on j and p/(1 - p) =
e^ε otherwise, so the whole set is protected at ε, tightly as soon as A != A'.

Per option v this is a pure frequency oracle if the support of (j, b) is taken
as S(j, b) = {j} when b = 1: p* = p/m, q* = (1 - p)/m.  The estimator here uses
the reports with j = v and b = 0 as well: with the score s_v = +1 for (v, 1),
-1 for (v, 0) and 0 otherwise, E[s_v] = (2p - 1)(2x_v - 1)/m, so

    estimate   f_v = (m T_v / (n (2p - 1)) + 1) / 2,   T_v = sum of s_v   (unbiased)
    variance   (m - (2p - 1)^2) / (4 n (2p - 1)^2)                       (every f_v)

about m e^ε/(e^ε - 1)^2 / n, against m^2/(ε^2 n) for one binary randomized
response per option at ε/m.  Statistics are 2m counts: reports (v, 1) for
every v, then reports (v, 0) for every v.

Wire: j big-endian in ``width_bytes(m)`` bytes, then one byte, 0x01 for b = 1
and 0x00 for b = 0 (docs/wire-format.md).  The size never depends on A.

The single-report path (``randomize``, ``encode``) is pure Python on
:mod:`deniable.randomness`; numpy is imported only by the vectorized
simulation and aggregation methods.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import InvalidParameter, InvalidReport, InvalidValue
from ..parameters import MAX_DOMAIN_SIZE, check_epsilon, check_int
from ..randomness import RESOLUTION, RngLike, as_source, exact_exp, threshold
from .base import Mechanism, log_ratio, probability_of, threshold_of, width_bytes

if TYPE_CHECKING:
    import numpy as np

    from ..intervals import ScoreModel

__all__ = ["OptionSampling"]

MIN_OPTIONS = 2


@dataclass(frozen=True, kw_only=True)
class OptionSampling(Mechanism):
    """Multiple choice over ``options`` options: (sampled option, randomized membership bit)."""

    epsilon: float
    options: int

    name: ClassVar[str] = "option_sampling"
    display_name: ClassVar[str] = "option sampling"
    browser_module: ClassVar[str] = "option_sampling.js"
    kind: ClassVar[str] = "multiple"

    _keep: int = field(init=False, repr=False, compare=False, default=0)
    _width: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(
            self, "options", check_int("options", self.options, MIN_OPTIONS, MAX_DOMAIN_SIZE)
        )
        e = exact_exp(self.epsilon)
        object.__setattr__(self, "_keep", threshold(e / (1 + e)))
        object.__setattr__(self, "_width", width_bytes(self.options))

    # -- probabilities ----------------------------------------------------------
    @property
    def keep_probability(self) -> float:
        """p: the probability the membership bit is reported truthfully."""
        return probability_of(self._keep)

    @property
    def p_star(self) -> float:
        """P[report (v, 1) | v in A] = p/m (the support view; see the module docstring)."""
        return self.keep_probability / self.options

    @property
    def q_star(self) -> float:
        """P[report (v, 1) | v not in A] = (1 - p)/m."""
        return (1.0 - self.keep_probability) / self.options

    @property
    def epsilon_implemented(self) -> float:
        return abs(log_ratio(self._keep, RESOLUTION - self._keep))

    @property
    def report_bytes(self) -> int:
        return self._width + 1

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "options": self.options}

    def resolved_parameters(self) -> dict[str, Any]:
        return {"keep": threshold_of(self.keep_probability)}

    # -- crosstabs ------------------------------------------------------------------
    @property
    def categories(self) -> int:
        return self.options

    @property
    def statistics_size(self) -> int:
        return 2 * self.options  # reports (v, 1), then reports (v, 0)

    @property
    def score_line(self) -> tuple[float, float, float, float]:
        # s = +1 for (v, 1), -1 for (v, 0), else 0: E s = -gap + 2 gap x.
        gap = (2 * self.keep_probability - 1) / self.options
        return -gap, 2 * gap, -1, 1

    def report_scores(self, batch: np.ndarray) -> np.ndarray:
        import numpy as np

        batch = np.asarray(batch, dtype=np.int64)
        rows = np.zeros((len(batch), self.options), dtype=np.int8)
        rows[np.arange(len(batch)), batch[:, 0]] = 2 * batch[:, 1] - 1
        return rows

    def score_model(self) -> ScoreModel:
        from ..intervals import ScoreModel

        gap = (2 * self.keep_probability - 1) / self.options
        # s = +1 for (v, 1), -1 for (v, 0), else 0: E s = -gap + 2 gap x, E s² = 1/m.
        return ScoreModel(
            slope=2 * gap,
            c0=1 / self.options - gap * gap,
            deviation=1 + gap,
            tail=("sampling", self.keep_probability, self.options),
        )

    # -- the respondent ---------------------------------------------------------
    def check_value(self, value: object) -> tuple[int, ...]:
        """The answer set as a tuple of ``options`` bits (0/1 or False/True)."""
        if not isinstance(value, tuple | list) or len(value) != self.options:
            raise InvalidValue(f"value must be a tuple of {self.options} bits")
        bits = []
        for bit in value:
            if isinstance(bit, numbers.Integral) and int(bit) in (0, 1):
                bits.append(int(bit))  # bool is Integral too; so are numpy integers
            else:
                raise InvalidValue(f"value must be a tuple of {self.options} bits, got {bit!r}")
        return tuple(bits)

    def randomize(self, value: object, rng: RngLike = None) -> tuple[int, int]:
        """One report (j, b), from the CSPRNG unless ``rng`` is given."""
        bits = self.check_value(value)
        source = as_source(rng)
        # Both draws happen for every answer: the option index is public and
        # independent of the answer, the keep draw decides nothing by itself.
        option = source.randbelow(self.options)
        keep = source.uniform53() < self._keep
        bit = bits[option]
        return option, bit if keep else 1 - bit

    def report_distribution(self, value: object) -> dict[str, float]:
        bits = self.check_value(value)
        p = self.keep_probability
        share = 1.0 / self.options
        result = {}
        for option in range(self.options):
            bit = bits[option]
            result[self.encode((option, bit))] = share * p
            result[self.encode((option, 1 - bit))] = share * (1.0 - p)
        return result

    def output_reports(self) -> tuple[str, ...]:
        """The 2m pairs (option index, bit), index-major: (0, 0), (0, 1), (1, 0), ..."""
        return tuple(self.encode((j, bit)) for j in range(self.options) for bit in (0, 1))

    # -- the wire (pure Python for one report) ------------------------------------
    def encode(self, report: Any) -> str:
        option, bit = self._check_report(report)
        return option.to_bytes(self._width, "big").hex() + ("01" if bit else "00")

    def decode(self, text: object) -> tuple[int, int]:
        if not isinstance(text, str) or len(text) != self.report_length:
            raise InvalidReport(
                f"report must be {self.report_length} hex characters for {self.name}"
            )
        try:
            data = bytes.fromhex(text)
        except ValueError:
            raise InvalidReport(f"reports must be lowercase hexadecimal ({self.name})") from None
        if text != data.hex():
            raise InvalidReport(f"reports must be lowercase hexadecimal ({self.name})")
        option = int.from_bytes(data[: self._width], "big")
        if option >= self.options or data[-1] > 1:
            raise InvalidReport(
                f"option_sampling report needs index in [0, {self.options}) and bit byte 00 or 01"
            )
        return option, data[-1]

    def _check_report(self, report: Any) -> tuple[int, int]:
        try:
            option, bit = report
            option, bit = int(option), int(bit)
        except (TypeError, ValueError):
            raise InvalidReport("option_sampling reports are (index, bit) pairs") from None
        if not 0 <= option < self.options or bit not in (0, 1):
            raise InvalidReport(
                f"option_sampling report needs index in [0, {self.options}) and bit 0/1"
            )
        return option, bit

    # -- simulation and aggregation (numpy, imported lazily) ------------------------
    @property
    def batch_columns(self) -> int:
        return 2

    def randomize_many(self, values: Any, rng: np.random.Generator) -> np.ndarray:
        import numpy as np

        sets = np.asarray(values)
        if sets.ndim != 2 or sets.shape[1] != self.options:
            raise InvalidValue(f"values must be an (n, {self.options}) array of bits")
        if sets.size and not np.all((sets == 0) | (sets == 1)):
            raise InvalidValue("values must be bits (0/1)")
        n = sets.shape[0]
        option = rng.integers(0, self.options, size=n)
        keep = rng.integers(0, RESOLUTION, size=n, dtype=np.uint64) < self._keep
        bit = sets[np.arange(n), option].astype(np.int64)
        return np.stack([option, np.where(keep, bit, 1 - bit)], axis=1).astype(np.int64)

    def statistics(self, batch: np.ndarray) -> np.ndarray:
        """2m counts: reports (v, 1) for each v, then reports (v, 0) for each v."""
        import numpy as np

        batch = self._check_batch(batch)
        option, bit = batch[:, 0], batch[:, 1]
        yes = np.bincount(option[bit == 1], minlength=self.options)
        no = np.bincount(option[bit == 0], minlength=self.options)
        return np.concatenate([yes, no]).astype(np.int64)

    def scores(self, statistics: np.ndarray) -> np.ndarray:
        """T_v = reports (v, 1) minus reports (v, 0), for every option v (last axis)."""
        import numpy as np

        counts = np.asarray(statistics, dtype=np.float64)
        return counts[..., : self.options] - counts[..., self.options :]

    def estimate(self, statistics: np.ndarray, n: int) -> np.ndarray:
        """Unbiased estimates of the share of respondents holding each option."""
        if n <= 0:
            raise InvalidParameter(f"n must be positive to estimate, got {n}")
        gap = 2 * self.keep_probability - 1
        return (self.options * self.scores(statistics) / (n * gap) + 1) / 2

    def variance(self, frequencies: np.ndarray, n: int) -> np.ndarray:
        """Exact variance of each estimate; it does not depend on the frequencies."""
        import numpy as np

        shape = np.shape(frequencies)
        return np.full(shape, self.variance_bound(n))

    def variance_bound(self, n: int) -> float:
        gap = 2 * self.keep_probability - 1
        return (self.options - gap * gap) / (4 * n * gap * gap)

    def approximate_variance(self, n: int) -> float:
        return self.variance_bound(n)

    def _check_batch(self, batch: object) -> np.ndarray:
        import numpy as np

        from .base import integer_rows

        array = integer_rows(batch, 2, "option_sampling reports must be (index, bit) pairs")
        if array.size and (
            array[:, 0].min() < 0
            or array[:, 0].max() >= self.options
            or not np.all((array[:, 1] == 0) | (array[:, 1] == 1))
        ):
            raise InvalidReport(
                f"option_sampling reports need index in [0, {self.options}) and bit 0/1"
            )
        return array

    def _pack_many(self, batch: np.ndarray) -> np.ndarray:
        import numpy as np

        from .base import pack_uints

        batch = self._check_batch(batch)
        return np.hstack([pack_uints(batch[:, 0], self._width), batch[:, 1:].astype(np.uint8)])

    def _unpack_many(self, data: np.ndarray) -> np.ndarray:
        import numpy as np

        from .base import unpack_uints

        options = unpack_uints(data[:, : self._width])
        bits = data[:, self._width].astype(np.int64)
        if options.size and (options.max() >= self.options or bits.max() > 1):
            raise InvalidReport(
                f"option_sampling report needs index in [0, {self.options}) and bit byte 00 or 01"
            )
        return np.stack([options, bits], axis=1)

    def stack(self, reports: Any) -> np.ndarray:
        import numpy as np

        rows = [self._check_report(report) for report in reports]
        if not rows:
            return np.zeros((0, 2), dtype=np.int64)
        return np.asarray(rows, dtype=np.int64)
