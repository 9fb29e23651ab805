"""Choosing a categorical mechanism: the smallest variance bound wins.

Wang, Blocki, Li, Jha (USENIX Security 2017), §5: GRR beats OUE/OLH when
d - 2 < 3 e^ε; otherwise OUE and OLH tie and OLH sends far fewer bits.  Rather
than hard-code that rule, every oracle in the table is built and compared by
its :meth:`~deniable.mechanisms.base.FrequencyOracle.variance_bound`; ties
(within a relative 1e-12) go to the smaller report, then to table order with
grr first.

That bound is the worst case over the true frequency (the one the Chebyshev
intervals use), not the f_v = 0 "approximate variance" of the papers.  The two
rank differently: OUE's worst case sits at f_v = 1 (p* = 1/2), so by the bound
SUE (symmetric, p* = 1 - q*) beats OUE and HRR at every ε, and OLH wherever
checked (d <= 4096, ε in [0.5, 5]), while by the f_v = 0 variance OUE and OLH
win at large d.  HRR's bound equals OUE's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidParameter
from ..parameters import check_domain_size, check_epsilon

_TIE = 1e-12


@dataclass(frozen=True, kw_only=True)
class Candidate:
    mechanism: str
    variance_bound: float  # for n = 1; divide by n
    report_bytes: int


@dataclass(frozen=True, kw_only=True)
class Recommendation:
    mechanism: str
    domain_size: int
    epsilon: float
    candidates: tuple[Candidate, ...]  # best first


def recommend(domain_size: int, epsilon: float) -> Recommendation:
    """The categorical mechanism with the smallest variance bound at this size and ε."""
    from . import CATEGORICAL

    domain_size = check_domain_size(domain_size)
    epsilon = check_epsilon(epsilon)
    candidates = []
    names = ["grr", *(name for name in CATEGORICAL if name != "grr")]
    for name in names:
        cls = CATEGORICAL[name]
        if name == "binary_rr" or domain_size > cls.max_domain_size:
            continue  # binary_rr is grr at d = 2
        try:
            oracle = cls(epsilon=epsilon, domain_size=domain_size)
        except InvalidParameter:
            continue
        candidates.append(
            Candidate(
                mechanism=name,
                variance_bound=oracle.variance_bound(1),
                report_bytes=oracle.report_bytes,
            )
        )
    best = min(c.variance_bound for c in candidates)
    # Ties: the smaller report, then table order (grr first, so a subset
    # selection with k = 1, which is grr, never displaces it).
    order = {c.mechanism: index for index, c in enumerate(candidates)}

    def rank(c: Candidate) -> tuple[bool, float, int]:
        if c.variance_bound <= best * (1 + _TIE):
            return (False, c.report_bytes, order[c.mechanism])
        return (True, c.variance_bound, order[c.mechanism])

    ordered = tuple(sorted(candidates, key=rank))
    return Recommendation(
        mechanism=ordered[0].mechanism,
        domain_size=domain_size,
        epsilon=epsilon,
        candidates=ordered,
    )
