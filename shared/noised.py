"""Estimation from batches the relay noised with dummy reports (the augmented shuffle).

Murakami, Sei and Eriguchi, "Augmented Shuffle Protocols for Accurate and Robust
Frequency Estimation under Differential Privacy" (arXiv 2504.07362): before it
shuffles a batch, the relay adds D_y dummies of every output report y, D_y drawn
independently from a published law (``deniable.dummies``).  With k such batches of a
question, the observed additive statistics are

    observed = real + Σ_batches Σ_y D_y · s(y),

s(y) the mechanism's statistics of the single report y.  The dummies are independent
of the reports, so

    E[observed] = E[real] + k · E[D] · Σ_y s(y),
    Cov[observed] = Cov[real] + k · Var[D] · Σ_y s(y) s(y)ᵀ,

exactly.  Every mechanism that names its outputs (``Mechanism.output_reports``) has an
estimator affine in its statistics, so subtracting the first term keeps it unbiased,
and the second adds a known constant to each estimate's variance.  Both are written
here once, from ``output_reports()`` and the mechanism's own ``statistics``; nothing
is copied per mechanism.

Interval families (``deniable.intervals``) take the dummies in through the score
model: the constant variance is added to ``c0`` (Chebyshev, exact-variance
Chebyshev), the dummies' largest deviation from their mean to ``deviation``
(Bernstein: every D_y · s_v(y) is an independent bounded term), and the exact tail
(``deniable.exact_tail``) convolves the real count's law with the law of the dummies
that land on the count, ``dummy_total_law(law, k · r)`` with r the output reports
that support it.  The real count n (the batches' ``real_units``) is the n of every
formula, never the stored count.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

from .dummies import DummyLaw
from .errors import InvalidParameter
from .lazy import np
from .parameters import check_int

__all__ = [
    "DummyNoise",
    "added_variance",
    "debiased_statistics",
    "dummy_mean",
    "mechanism_key",
    "noised_half_width",
    "noised_half_widths",
    "noised_score_model",
    "output_statistics",
    "respondents_needed",
]


@dataclass(frozen=True, kw_only=True)
class DummyNoise:
    """The dummies inside a question's statistics: ``batches`` plausible noised batches,
    each with D_y ~ ``law`` dummies of every output report y."""

    law: DummyLaw
    batches: int

    def __post_init__(self) -> None:
        if not isinstance(self.law, DummyLaw):
            raise InvalidParameter("law must be a deniable.dummies law")
        object.__setattr__(self, "batches", check_int("batches", self.batches, 1, 1 << 40))

    def repeated(self, copies: int) -> DummyNoise:
        """The dummies as one part of a product report sees them, when each of the part's
        values is carried by ``copies`` of the whole report's output values (a number's
        status under both signs: 2; its sign under every status: k).  Each batch then adds
        ``copies`` independent draws of the law to every value of the part, exactly what
        ``copies`` times the batches add."""
        copies = check_int("copies", copies, 1, 1 << 20)
        return DummyNoise(law=self.law, batches=self.batches * copies)


def output_statistics(mechanism: Any) -> np.ndarray:
    """(m, statistics_size) int64: the statistics s(y) of each output report y alone, in
    ``mechanism.output_reports()`` order.  InvalidParameter when the mechanism names none."""
    return _output_statistics(mechanism).copy()


@functools.lru_cache(maxsize=256)
def _output_statistics(mechanism: Any) -> np.ndarray:
    outputs = mechanism.output_reports()
    if not outputs:
        raise InvalidParameter(
            f"{type(mechanism).__name__} does not name its output reports: a relay cannot "
            "add dummies to it"
        )
    return np.stack([np.asarray(mechanism.wire_statistics([y]), np.int64) for y in outputs])


def dummy_mean(mechanism: Any, noise: DummyNoise) -> np.ndarray:
    """k · E[D] · Σ_y s(y): what the dummies add to the statistics on average."""
    return noise.batches * noise.law.mean * _output_statistics(mechanism).sum(axis=0)


def debiased_statistics(mechanism: Any, statistics: Any, noise: DummyNoise | None) -> np.ndarray:
    """The observed statistics minus the dummies' mean (unchanged when ``noise`` is None):
    the mechanism's estimator applied to them is unbiased for the respondents' answers."""
    observed = np.asarray(statistics, dtype=np.float64)
    if noise is None:
        return observed
    return observed - dummy_mean(mechanism, noise)


def _linear_map(mechanism: Any, n: int) -> np.ndarray:
    """A with estimate(s, n) = A s + estimate(0, n): the estimator is affine in s."""
    size = mechanism.statistics_size
    zero = np.asarray(mechanism.estimate(np.zeros(size), n), dtype=np.float64)
    unit = np.eye(size)
    columns = [
        np.asarray(mechanism.estimate(unit[j], n), dtype=np.float64) - zero for j in range(size)
    ]
    return np.stack(columns, axis=1)


def mechanism_key(mechanism: Any) -> tuple:
    """An immutable key naming everything the estimator depends on: the class, its parameters
    and its signed probabilities (two mechanisms equal as dataclasses may differ in the
    probabilities they adopted, so the dataclass's own hash is not enough)."""

    def frozen(values: dict[str, Any]) -> tuple:
        return tuple(sorted((name, repr(value)) for name, value in values.items()))

    return (
        type(mechanism).__module__,
        type(mechanism).__qualname__,
        frozen(mechanism.parameters()),
        frozen(mechanism.resolved_parameters()),
    )


@dataclass(frozen=True)
class _Keyed:
    """A mechanism that hashes and compares by :func:`mechanism_key` (the cache's key)."""

    key: tuple
    mechanism: Any = dataclasses.field(compare=False, hash=False)


@dataclass(frozen=True)
class _ScoreMap:
    """Each output report's effect on each estimate, at n = 1 when ``per_n`` (it is then
    that divided by n at every n), else None."""

    shifts: np.ndarray | None  # (outputs, estimates)
    squares: np.ndarray | None  # Σ_y shift², per estimate
    largest: float


def _score_map(mechanism: Any) -> _ScoreMap:
    return _cached_score_map(_keyed(mechanism))


@functools.lru_cache(maxsize=64)
def _cached_score_map(keyed: _Keyed) -> _ScoreMap:
    """The map of output reports to estimates, computed once per mechanism.  Every noisable
    estimator here is (statistics / n) mapped affinely, so A(n) = A(1)/n; that is checked at
    n = 2 and n = 7 rather than assumed, and a mechanism for which it fails is mapped per n."""
    mechanism = keyed.mechanism
    outputs = _output_statistics(mechanism)
    one = _linear_map(mechanism, 1)
    for n in (2, 7):
        if not np.allclose(_linear_map(mechanism, n) * n, one, rtol=1e-12, atol=1e-15):
            return _ScoreMap(shifts=None, squares=None, largest=0.0)
    shifts = outputs @ one.T
    return _ScoreMap(
        shifts=shifts,
        squares=(shifts * shifts).sum(axis=0),
        largest=float(np.abs(shifts).max()),
    )


def _shift_squares_and_largest(mechanism: Any, n: int) -> tuple[np.ndarray, float]:
    """(Σ_y (A s(y))² per estimate, max |A s(y)|) at n reports."""
    cached = _score_map(mechanism)
    if cached.shifts is not None:
        return cached.squares / (n * n), cached.largest / n
    shifts = _output_statistics(mechanism) @ _linear_map(mechanism, n).T
    return (shifts * shifts).sum(axis=0), float(np.abs(shifts).max())


def added_variance(mechanism: Any, n: int, noise: DummyNoise) -> np.ndarray:
    """Per estimate (output units): the dummies' variance, diag(A · k Var[D] Σ_y s(y)s(y)ᵀ · Aᵀ)
    = k · Var[D] · Σ_y (A s(y))², with A the estimator's linear part at n reports."""
    n = check_int("n", n, 1, 1 << 62)
    squares, _ = _shift_squares_and_largest(mechanism, n)
    return noise.batches * noise.law.variance * squares


def noised_score_model(mechanism: Any, n: int, noise: DummyNoise | None) -> Any:
    """The mechanism's :class:`~deniable.intervals.ScoreModel` with the dummies folded in,
    at n real reports (the model then depends on n; use it with that n only).

    * ``c0`` grows by n · slope² · (the largest added variance, in θ units): Var θ̂ =
      v(θ)/(n slope²) + added, exactly, so every variance family stays valid.
    * ``deviation`` becomes the largest of the reports' and of the dummy terms'
      |D_y s_v(y) - E| (each an independent bounded summand, Bernstein's condition),
      in score units.
    * ``tail``: ("pure", p*, q*, law, copies) when each count is a pure oracle's support
      count and every output report adds 0 or 1 to it, the same number r of outputs
      supporting every category (copies = k · r); the exact tail then convolves with
      ``dummy_total_law(law, copies)``.  Otherwise None (no exact tail: option sampling's
      law is conditioned on the sampled count, which dummies hide).
    """
    from .intervals import score_model

    model = score_model(mechanism)
    if noise is None:
        return model
    n = check_int("n", n, 1, 1 << 62)
    theta_variance = added_variance(mechanism, n, noise) / (model.scale * model.scale)
    extra = float(theta_variance.max())
    c0 = model.c0 + n * model.slope * model.slope * extra
    deviation = model.deviation
    if deviation is not None:
        law = noise.law
        spread = max(law.mean - law.low, law.high - law.mean)
        # a dummy's effect on θ̂ is (A s(y))_v; in score units it is that times n · slope
        _, shift = _shift_squares_and_largest(mechanism, n)
        largest = shift / model.scale * n * abs(model.slope) * spread
        deviation = max(deviation, largest)
    tail = None
    if model.tail is not None and model.tail[0] == "pure":
        outputs = _output_statistics(mechanism)
        supports = outputs.sum(axis=0)
        if outputs.min() >= 0 and outputs.max() <= 1 and supports.min() == supports.max():
            tail = (*model.tail[:3], noise.law, noise.batches * int(supports[0]))
    return dataclasses.replace(model, c0=c0, deviation=deviation, tail=tail)


def noised_half_widths(
    mechanism: Any,
    n: int,
    law: DummyLaw | None,
    batches: int = 1,
    beta: float = 0.05,
    categories: int | None = None,
) -> dict[str, float]:
    """Every published family's data-free worst-case half-width (output units: shares for
    frequencies, the answer's units for a mean) at n real reports with ``batches`` noised
    batches of dummies from ``law`` (None: no dummies), per estimate at level 1 - β.

    The exact tail is included where it would be published for ``categories`` estimates
    (the mechanism's count by default, as ``deniable.estimation``); its width is the
    true maximum over every observed count (``exact_tail``'s branch and bound).
    """
    from .intervals import check_beta

    beta = check_beta(beta)
    n = check_int("n", n, 1, 1 << 62)
    noise = None if law is None else DummyNoise(law=law, batches=batches)
    if categories is None:
        categories = int(getattr(mechanism, "categories", 1))
    return dict(_widths(_keyed(mechanism), n, noise, beta, categories))


def _keyed(mechanism: Any) -> _Keyed:
    return _Keyed(mechanism_key(mechanism), mechanism)


@functools.lru_cache(maxsize=1024)
def _widths(
    keyed: _Keyed, n: int, noise: DummyNoise | None, beta: float, categories: int
) -> tuple[tuple[str, float], ...]:
    from . import exact_tail
    from .intervals import EXACT_TAIL, available_families, nominal_half_width

    mechanism = keyed.mechanism
    model = noised_score_model(mechanism, n, noise)
    widths = {
        family: model.scale * nominal_half_width(family, n, model, beta)
        for family in available_families(model)
    }
    if model.tail is not None and exact_tail.available(model.tail, n, categories):
        widths[EXACT_TAIL] = model.scale * nominal_half_width(EXACT_TAIL, n, model, beta)
    return tuple(widths.items())


def noised_half_width(
    mechanism: Any,
    n: int,
    law: DummyLaw | None,
    batches: int = 1,
    beta: float = 0.05,
    categories: int | None = None,
) -> tuple[float, str]:
    """(half-width, family): the narrowest published interval's data-free worst-case
    half-width (:func:`noised_half_widths`) and the family that gives it."""
    widths = noised_half_widths(mechanism, n, law, batches, beta, categories)
    family = min(widths, key=lambda name: (widths[name], name != "chebyshev_exact"))
    if not math.isfinite(widths[family]):
        raise InvalidParameter("no finite half-width")
    return widths[family], family


def respondents_needed(
    mechanism: Any, noise: DummyNoise, beta: float, categories: int, target: float = 0.1
) -> int:
    """The fewest real respondents whose narrowest published half-width, in units of the
    answer's range, is at most ``target``, with ``noise`` in their batches (the exact tail
    counted where it is published for ``categories`` estimates; 0 leaves it out)."""
    return _respondents_needed(_keyed(mechanism), noise, beta, categories, target)


@functools.lru_cache(maxsize=256)
def _respondents_needed(
    keyed: _Keyed, noise: DummyNoise, beta: float, categories: int, target: float
) -> int:
    mechanism = keyed.mechanism
    model = noised_score_model(mechanism, 1, None)
    span = model.scale * (model.high - model.low)

    def reaches(n: int) -> bool:
        return min(dict(_widths(keyed, n, noise, beta, categories)).values()) / span <= target

    low, high = 1, 2
    while not reaches(high):
        low, high = high, high * 2
        if high > 1 << 40:
            return high
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if reaches(middle) else (middle + 1, high)
    return low
