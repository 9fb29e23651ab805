"""Mechanism figures: simulation speed, aggregation time, CSPRNG speed, MSE / theory.

Run: ``.venv/bin/python benchmarks/mechanisms.py [--n 200000] [--runs 5]``.
Prints one table row per (mechanism, domain size) at ε = 1:

* ``simulate/s``: reports per second from ``randomize_many`` (numpy, simulation path);
* ``aggregate s``: seconds for ``support_counts`` + ``estimate`` over n reports;
* ``csprng/s``: single reports per second from ``randomize`` on the CSPRNG path;
* numeric mechanisms (values in [0, 100]): the same columns for the mean, one
  squared error per run over at least 2,000 runs;
* ``MSE/theory``: mean squared error over categories divided by the mean exact
  variance, averaged over independent collections (1.0 is perfect): at least
  ``--runs``, and enough that runs × d ≥ 5,000 squared errors are averaged
  (standard error of the ratio about 2%).

Then the peer: OLH aggregation written as a plain Python loop over reports
(what pure-Python LDP libraries do), timed on a subsample and scaled to n,
and the ratio to the vectorized aggregation measured in the same run.
No assertions: figures only.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from deniable.mechanisms import CATEGORICAL, NUMERIC, OLH, Duchi
from deniable.mechanisms.local_hashing import bucket

EPSILON = 1.0


def timed(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - start


def csprng_rate(oracle, seconds: float = 0.4) -> float:
    count, start = 0, time.perf_counter()
    value = 1 % oracle.domain_size
    while time.perf_counter() - start < seconds:
        for _ in range(100):
            oracle.randomize(value)
        count += 100
    return count / (time.perf_counter() - start)


def population(domain_size: int, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    weights = 1.0 / np.arange(1, domain_size + 1)  # Zipf-like: a few large, many small
    truth = weights / weights.sum()
    values = rng.choice(domain_size, size=n, p=truth)
    return values, np.bincount(values, minlength=domain_size) / n


def row(name: str, domain_size: int, n: int, runs: int) -> dict:
    cls = CATEGORICAL[name]
    oracle = (
        cls(epsilon=EPSILON)
        if name == "binary_rr"
        else cls(epsilon=EPSILON, domain_size=domain_size)
    )
    rng = np.random.default_rng(2026)
    ratios, simulate, aggregate = [], [], []
    runs = max(runs, -(-5000 // domain_size))
    for _ in range(runs):
        values, actual = population(domain_size, n, rng)
        batch, t_sim = timed(oracle.randomize_many, values, rng)
        start = time.perf_counter()
        estimates = oracle.estimate(oracle.support_counts(batch), n)
        aggregate.append(time.perf_counter() - start)
        simulate.append(n / t_sim)
        mse = np.mean((estimates - actual) ** 2)
        ratios.append(mse / np.mean(oracle.variance(actual, n)))
    return {
        "mechanism": name,
        "d": domain_size,
        "simulate": float(np.median(simulate)),
        "aggregate": float(np.median(aggregate)),
        "csprng": csprng_rate(oracle),
        "mse_theory": float(np.mean(ratios)),
        "report_bytes": oracle.report_bytes,
        "runs": runs,
    }


def exact_mean_variance(mechanism, values: np.ndarray) -> float:
    """Var of the mean estimate for this fixed population (the theory the MSE is compared to)."""
    n, span = values.size, mechanism.hi - mechanism.lo
    if isinstance(mechanism, Duchi):
        t = 2 * (values - mechanism.lo) / span - 1
        return float(np.sum(mechanism.bound**2 - t**2) * (span / 2) ** 2 / n**2)
    grid = mechanism.grid_size * (values - mechanism.lo) / span
    rounding = np.sum((grid - np.floor(grid)) * (np.ceil(grid) - grid))
    noise = n * mechanism.noise_variance
    return float((rounding + noise) * (span / mechanism.grid_size) ** 2 / n**2)


def numeric_row(name: str, n: int, runs: int) -> dict:
    mechanism = NUMERIC[name](epsilon=EPSILON, lo=0.0, hi=100.0)
    rng = np.random.default_rng(7)
    ratios, simulate, aggregate = [], [], []
    for _ in range(max(runs, 2000)):  # one squared error per run
        values = rng.beta(2, 5, size=n) * 100.0
        batch, t_sim = timed(mechanism.randomize_many, values, rng)
        start = time.perf_counter()
        mean = mechanism.estimate(mechanism.statistics(batch), n)[0]
        aggregate.append(time.perf_counter() - start)
        simulate.append(n / t_sim)
        ratios.append((mean - values.mean()) ** 2 / exact_mean_variance(mechanism, values))
    start, count = time.perf_counter(), 0
    while time.perf_counter() - start < 0.4:
        for _ in range(100):
            mechanism.randomize(37.5)
        count += 100
    return {
        "mechanism": name,
        "d": "-",
        "simulate": float(np.median(simulate)),
        "aggregate": float(np.median(aggregate)),
        "csprng": count / (time.perf_counter() - start),
        "mse_theory": float(np.mean(ratios)),
        "report_bytes": mechanism.report_bytes,
        "runs": len(ratios),
    }


def olh_peer(n: int, domain_size: int, sample: int = 1000) -> tuple[float, float]:
    """Seconds for pure-Python OLH aggregation of n reports (scaled from a sample)."""
    oracle = OLH(epsilon=EPSILON, domain_size=domain_size)
    rng = np.random.default_rng(1)
    batch = oracle.randomize_many(rng.integers(0, domain_size, size=n), rng)
    g = oracle.hash_range
    start = time.perf_counter()
    counts = [0] * domain_size
    for seed, y in batch[:sample].tolist():
        for v in range(domain_size):
            if bucket(seed, v, g) == y:
                counts[v] += 1
    python_seconds = (time.perf_counter() - start) * n / sample
    _, vectorized = timed(lambda: oracle.estimate(oracle.support_counts(batch), n))
    assert counts == oracle.support_counts(batch[:sample]).tolist()
    return python_seconds, vectorized


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"n = {args.n:,}, epsilon = {EPSILON}\n")
    header = (
        f"{'mechanism':<17}{'d':>6}{'bytes':>7}{'simulate/s':>13}{'aggregate s':>13}"
        f"{'csprng/s':>11}{'MSE/theory':>12}{'runs':>6}"
    )
    print(header)
    print("-" * len(header))
    # binary_rr only has d = 2, so it gets that row; every other oracle d = 16 and 1024.
    for domain_size in (2, 16, 1024):
        for name, cls in CATEGORICAL.items():
            if domain_size > cls.max_domain_size or (domain_size == 2) != (name == "binary_rr"):
                continue
            r = row(name, domain_size, args.n, args.runs)
            print(
                f"{r['mechanism']:<17}{r['d']:>6}{r['report_bytes']:>7}{r['simulate']:>13,.0f}"
                f"{r['aggregate']:>13.3f}{r['csprng']:>11,.0f}{r['mse_theory']:>12.3f}{r['runs']:>6}"
            )
    for name in NUMERIC:
        r = numeric_row(name, args.n, args.runs)
        print(
            f"{r['mechanism']:<17}{r['d']:>6}{r['report_bytes']:>7}{r['simulate']:>13,.0f}"
            f"{r['aggregate']:>13.3f}{r['csprng']:>11,.0f}{r['mse_theory']:>12.3f}{r['runs']:>6}"
        )
    python_seconds, vectorized = olh_peer(args.n, 1024)
    print(
        f"\nOLH aggregation, d = 1024, n = {args.n:,}: vectorized {vectorized:.3f} s; "
        f"pure-Python loop (scaled from 1,000 reports) {python_seconds:.1f} s; "
        f"ratio {python_seconds / vectorized:,.0f}x"
    )


if __name__ == "__main__":
    main()
