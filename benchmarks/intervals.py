"""Interval figures: mean half-widths of every family, ratios to today's Chebyshev, coverage.

Run: ``.venv/bin/python benchmarks/intervals.py [--n 100000] [--collections 100]``.
For every mechanism at d in {16, 1024} (options m for ``option_sampling``; numeric
mechanisms once, on [0, 1]) and ε in {0.5, 1, 4}, with β = 0.05, over
``--collections`` collections of n reports from the uniform distribution (share
1/d per category; every option held by half the respondents; half the numeric
answers at each end of the range), prints per interval family:

* ``± per cat`` / ``± simult``: the mean half-width (upper - lower)/2 of the
  published intervals (cut at 0 and 1, or at the ends of the numeric range),
  per category and simultaneous (all d at once, β/d each); where even today's
  interval is cut on both sides (d = 1024 at small ε) the ratio tends to 1;
* ``x today``: today's worst-case Chebyshev half-width divided by it (same run,
  same collections; > 1 means narrower);
* ``cover``: the measured coverage of the published (cut) intervals, per
  category averaged over categories, and simultaneous (all categories at once).

Collections are sampled exactly where cheap: unary encodings (independent bits)
and option sampling from binomials and multinomials, GRR, HRR, Duchi and
discrete Laplace with ``randomize_many``.  OLH (d hashes per report) and subset
selection at d = 1024 (hundreds of values per report) use the per-category
binomial model C_v = Bin(n_v, p*) + Bin(n - n_v, q*), exact per category, with
categories drawn independently (marked ``*``).  No assertions: figures only.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from deniable.estimation import FAMILIES, interval_families, score_model
from deniable.mechanisms import CATEGORICAL, NUMERIC, OptionSampling

BETA = 0.05
SIZES = (16, 1024)
EPSILONS = (0.5, 1.0, 4.0)


def frequency_statistics(oracle, n: int, collections: int, rng: np.random.Generator):
    """(statistics per collection, true shares, marginal-model flag) at the uniform distribution."""
    d = oracle.domain_size
    holders = np.full(d, n // d)
    holders[: n - holders.sum()] += 1
    truth = holders / n
    name = oracle.name
    shape = (collections, d)
    if name in ("sue", "oue") or name in ("olh",) or (name == "subset" and d > 64):
        q = 1.0 / oracle.hash_range if name == "olh" else oracle.q_star
        kept = rng.binomial(holders, oracle.p_star, size=shape)
        return kept + rng.binomial(n - holders, q, size=shape), truth, name not in ("sue", "oue")
    values = np.repeat(np.arange(d), holders)
    rows = [oracle.support_counts(oracle.randomize_many(values, rng)) for _ in range(collections)]
    return np.vstack(rows), truth, False


def option_statistics(mechanism: OptionSampling, n: int, collections: int, rng):
    """Two groups: even options held by half the respondents, odd ones by the other half."""
    m = mechanism.options
    total = np.zeros((collections, 2 * m), dtype=np.int64)
    for parity, count in ((0, n // 2), (1, n - n // 2)):
        bits = tuple(int(j % 2 == parity) for j in range(m))
        distribution = mechanism.report_distribution(bits)
        outputs = list(distribution)
        batch = mechanism.decode_many(outputs)
        column = np.where(batch[:, 1] == 1, batch[:, 0], m + batch[:, 0])
        draws = rng.multinomial(count, [distribution[y] for y in outputs], size=collections)
        np.add.at(total.T, column, draws.T)
    truth = np.full(m, 0.5)
    truth[0::2] = (n // 2) / n
    truth[1::2] = (n - n // 2) / n
    return total, truth, False


def measure(mechanism, statistics, truth, n: int, categories: int, scale_today: float):
    """Per family: (± per cat, ± simult, cover per cat, cover simult)."""
    model = score_model(mechanism)
    estimates = (
        mechanism.estimate(statistics, n)
        if categories > 1 or not hasattr(mechanism, "lo")
        else np.array([mechanism.estimate(row, n)[0] for row in statistics])[:, None]
    )
    published = interval_families(
        estimates, n, model, BETA, categories, mechanism.variance_bound(n)
    )
    result = {}
    for family, interval in published.items():
        widths = [
            float(np.mean(interval.upper - interval.lower) / 2),
            float(np.mean(interval.simultaneous_upper - interval.simultaneous_lower) / 2),
        ]
        inside = (interval.lower <= truth + 1e-12) & (truth - 1e-12 <= interval.upper)
        together = (interval.simultaneous_lower <= truth + 1e-12) & (
            truth - 1e-12 <= interval.simultaneous_upper
        )
        result[family] = (*widths, float(inside.mean()), float(together.all(axis=-1).mean()))
    return result


def rows_for(label: str, d: str, epsilon: float, figures: dict, marked: bool) -> list[list[str]]:
    today_per, today_both = figures["chebyshev"][0], figures["chebyshev"][1]
    rows = []
    for family in FAMILIES:
        if family not in figures:
            continue
        per, both, cover, cover_both = figures[family]
        rows.append(
            [label + ("*" if marked else ""), d, f"{epsilon:g}", family, f"{per:.4g}",
             f"{today_per / per:.2f}", f"{cover:.3f}", f"{both:.4g}",
             f"{today_both / both:.2f}", f"{cover_both:.3f}"]
        )  # fmt: skip
    return rows


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--collections", type=int, default=100)
    parser.add_argument("--seed", type=int, default=20261126)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    n, collections = args.n, args.collections
    started = time.perf_counter()
    rows = []
    for d in SIZES:
        for epsilon in EPSILONS:
            for name in sorted(CATEGORICAL):
                if name == "binary_rr":
                    continue  # d = 2 only; it is grr at d = 2
                oracle = CATEGORICAL[name](epsilon=epsilon, domain_size=d)
                statistics, truth, marked = frequency_statistics(oracle, n, collections, rng)
                figures = measure(oracle, statistics, truth, n, d, 1.0)
                rows += rows_for(name, str(d), epsilon, figures, marked)
            sampling = OptionSampling(epsilon=epsilon, options=d)
            statistics, truth, marked = option_statistics(sampling, n, collections, rng)
            figures = measure(sampling, statistics, truth, n, d, 1.0)
            rows += rows_for("option_sampling", str(d), epsilon, figures, marked)
    for epsilon in EPSILONS:
        for name in sorted(NUMERIC):
            mechanism = NUMERIC[name](epsilon=epsilon, lo=0.0, hi=1.0)
            values = np.repeat([0.0, 1.0], [n // 2, n - n // 2])
            statistics = np.vstack(
                [mechanism.statistics(mechanism.randomize_many(values, rng))
                 for _ in range(collections)]
            )  # fmt: skip
            truth = np.array([values.mean()])
            figures = measure(mechanism, statistics, truth, n, 1, 1.0)
            rows += rows_for(name, "-", epsilon, figures, False)
    headers = ["mechanism", "d", "eps", "family", "± per cat", "x today", "cover",
               "± simult", "x today", "cover"]  # fmt: skip
    print(
        f"n = {n:,}, beta = {BETA}, {collections} collections per row, uniform truth; "
        "'x today' = today's Chebyshev half-width / this one (same run)"
    )
    print(table(headers, rows))
    print(
        "* per-category binomial model (exact per category; categories independent). "
        "Numeric rows: half-widths on [0, 1]; simultaneous = per category (one mean)."
    )
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
