"""Choosing a mechanism by a stated rule.

The rule (Wang, Blocki, Li, Jha, USENIX Security 2017, §5, compare protocols
by their variance; Wang, Li, Jha, S&P 2018, for set-valued answers):

1. **Default, ``criterion="uniform"``:** the expected squared error summed over
   categories at the uniform distribution, per respondent (divide by n):
   single choice Σ_v Var[f̂_v] at f_v = 1/d; multiple choice Σ_v Var[f̂_v] at
   f_v = 1/2 (every set equally likely).  This is the papers' rule.
2. **``criterion="worst_case"``:** the sum over categories of the variance bound
   that holds for every distribution (the one the worst-case Chebyshev
   intervals use).
3. Ties (within a relative 1e-12) go to the smaller report, then to the
   registry's order (grr first among the oracles for any d, so a subset
   selection with k = 1, which is grr, never displaces it).

Both figures are computed for every candidate and shown by the planner
(``deniable-aggregator plan``).  The two rank differently: OUE's worst case
sits at f_v = 1 (p* = 1/2), so by the bound SUE beats OUE and HRR, while at
the uniform distribution OUE and OLH win at large d, as the papers say.

For multiple choice the candidates are ``option_sampling`` (one sampled option
at the full ε) and ``binary_rr`` (one binary randomized response per option at
ε/m): sampling wins unless ε is large compared with m.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InvalidParameter
from ..parameters import check_domain_size, check_epsilon

__all__ = ["Recommendation", "recommend"]

_TIE = 1e-12
CRITERIA = ("uniform", "worst_case")


@dataclass(frozen=True, kw_only=True)
class Candidate:
    mechanism: str
    expected_squared_error: float  # summed over categories at the uniform distribution, n = 1
    worst_case_squared_error: float  # summed over categories, every distribution, n = 1
    variance_bound: float  # one category, every distribution, n = 1; divide by n
    report_bytes: int


@dataclass(frozen=True, kw_only=True)
class Recommendation:
    mechanism: str
    domain_size: int
    epsilon: float
    criterion: str
    multiple: bool
    candidates: tuple[Candidate, ...]  # best first


def _single_choice(domain_size: int, epsilon: float) -> list[Candidate]:
    import numpy as np

    from . import CATEGORICAL

    candidates = []
    for name, cls in CATEGORICAL.items():
        if cls.binary or domain_size > cls.max_domain_size:
            continue  # a two-category oracle is the d = 2 case of another one
        try:
            oracle = cls(epsilon=epsilon, domain_size=domain_size)
        except InvalidParameter:
            continue
        uniform = np.full(domain_size, 1.0 / domain_size)
        candidates.append(
            Candidate(
                mechanism=name,
                expected_squared_error=float(oracle.variance(uniform, 1).sum()),
                worst_case_squared_error=domain_size * oracle.variance_bound(1),
                variance_bound=oracle.variance_bound(1),
                report_bytes=oracle.report_bytes,
            )
        )
    return candidates


def _multiple_choice(options: int, epsilon: float) -> list[Candidate]:
    from .binary_rr import BinaryRR
    from .option_sampling import OptionSampling

    sampling = OptionSampling(epsilon=epsilon, options=options)
    split = BinaryRR(epsilon=epsilon / options)
    p = split.p_star
    split_variance = p * (1 - p) / (2 * p - 1) ** 2  # binary RR: the same for every f
    return [
        Candidate(
            mechanism=sampling.name,
            expected_squared_error=options * sampling.variance_bound(1),
            worst_case_squared_error=options * sampling.variance_bound(1),
            variance_bound=sampling.variance_bound(1),
            report_bytes=sampling.report_bytes,
        ),
        Candidate(
            mechanism=split.name,
            expected_squared_error=options * split_variance,
            worst_case_squared_error=options * split.variance_bound(1),
            variance_bound=split.variance_bound(1),
            report_bytes=options,
        ),
    ]


def recommend(
    domain_size: int, epsilon: float, *, criterion: str = "uniform", multiple: bool = False
) -> Recommendation:
    """The mechanism with the smallest summed squared error (see the module docstring).

    ``domain_size`` is the number of categories (single choice) or options
    (``multiple=True``).
    """
    domain_size = check_domain_size(domain_size)
    epsilon = check_epsilon(epsilon)
    if criterion not in CRITERIA:
        raise InvalidParameter(f"criterion must be one of {', '.join(CRITERIA)}, got {criterion!r}")
    if multiple:
        candidates = _multiple_choice(domain_size, epsilon)
    else:
        candidates = _single_choice(domain_size, epsilon)
    field_name = "expected_squared_error" if criterion == "uniform" else "worst_case_squared_error"
    best = min(getattr(c, field_name) for c in candidates)
    order = {c.mechanism: index for index, c in enumerate(candidates)}

    def rank(c: Candidate) -> tuple[bool, float, int]:
        value = getattr(c, field_name)
        if value <= best * (1 + _TIE) or math.isclose(value, best, rel_tol=_TIE):
            return (False, c.report_bytes, order[c.mechanism])
        return (True, value, order[c.mechanism])

    ordered = tuple(sorted(candidates, key=rank))
    return Recommendation(
        mechanism=ordered[0].mechanism,
        domain_size=domain_size,
        epsilon=epsilon,
        criterion=criterion,
        multiple=multiple,
        candidates=ordered,
    )
