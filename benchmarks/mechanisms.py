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

Then the wire: every oracle at d = 1,024 aggregated from n wire payloads (hex
strings, as stored): ``wire_statistics`` + ``estimate``, best of ``--runs``,
next to the straightforward decoder it replaced (one check per payload, a
regular expression over the joined text, ``np.unpackbits`` for unary), measured
in the same run.  For OUE also the peers, aggregating the same reports from
in-memory arrays (multi-freq-ldpy ``UE_Aggregator_MI`` over float vectors,
pure-ldp ``UEServer.aggregate`` per report), at n and at n / 10, when they can
be imported (``--peers SITE_PACKAGES`` adds a scratch venv's site-packages).
Wall-clock seconds (OLH counts on threads); the machine may be shared, so
compare the ratios, which are taken in the same run.
No assertions: figures only.
"""

from __future__ import annotations

import argparse
import re
import sys
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


WIRE_ORACLES = ("grr", "sue", "oue", "olh", "hrr", "subset")
_HEX = re.compile(r"[0-9a-f]*")


def reference_statistics(oracle, payloads: list[str]) -> np.ndarray:
    """The decoder the fast wire replaced: one check per payload, a regex, a full unpack."""
    width = oracle.report_length
    for payload in payloads:
        if not isinstance(payload, str) or len(payload) != width:
            raise ValueError("bad payload")
    text = "".join(payloads)
    if not _HEX.fullmatch(text):
        raise ValueError("not lowercase hex")
    data = np.frombuffer(bytes.fromhex(text), dtype=np.uint8).reshape(len(payloads), -1)
    return oracle.statistics(oracle._unpack_many(data))


def best_seconds(function, runs: int) -> tuple[object, float]:
    best, result = float("inf"), None
    for _ in range(runs):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return result, best


def oue_peers(batch: np.ndarray, runs: int) -> dict[str, float]:
    """Seconds for the peers to aggregate the same OUE reports held in memory."""
    seconds = {}
    try:
        from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Aggregator_MI

        vectors = batch.astype(np.float64)  # UE_Client returns float vectors
        _, seconds["multi-freq-ldpy 0.2.5 UE_Aggregator_MI"] = best_seconds(
            lambda: UE_Aggregator_MI(vectors, EPSILON, optimal=True), runs
        )
    except ImportError:
        pass
    try:
        from pure_ldp.frequency_oracles import UEServer

        vectors = list(batch.astype(np.float64))

        def pure() -> object:
            server = UEServer(epsilon=EPSILON, d=batch.shape[1], use_oue=True)
            for vector in vectors:
                server.aggregate(vector)
            return server.estimate_all(range(1, batch.shape[1] + 1), suppress_warnings=True)

        _, seconds["pure-ldp 1.2.0 UEServer.aggregate"] = best_seconds(pure, min(runs, 2))
    except ImportError:
        pass
    return seconds


def wire_rows(n: int, runs: int) -> None:
    print(
        f"\naggregating n = {n:,} reports from wire hex at d = 1,024 (wall s, best of {runs}): "
        "wire_statistics + estimate, and the decoder it replaced, same run"
    )
    print(f"  {'oracle':<8}{'hex MB':>8}{'from wire s':>13}{'old decoder s':>15}{'ratio':>8}")
    rng = np.random.default_rng(11)
    for name in WIRE_ORACLES:
        wire_row(name, n, runs, rng)


def wire_row(name: str, n: int, runs: int, rng: np.random.Generator) -> None:
    oracle = CATEGORICAL[name](epsilon=EPSILON, domain_size=1024)
    values, _ = population(1024, n, rng)
    batch = oracle.randomize_many(values, rng)
    payloads = oracle.encode_many(batch)
    counts, fast = best_seconds(lambda: oracle.estimate(oracle.wire_statistics(payloads), n), runs)
    reference, slow = best_seconds(
        lambda: oracle.estimate(reference_statistics(oracle, payloads), n), min(runs, 2)
    )
    assert np.array_equal(counts, reference)
    megabytes = n * oracle.report_length / 1e6
    print(f"  {name:<8}{megabytes:>8.1f}{fast:>13.3f}{slow:>15.3f}{slow / fast:>8.2f}")
    if name != "oue":
        return
    for size in (n, n // 10):
        part = payloads[:size]
        _, ours = best_seconds(
            lambda p=part, s=size: oracle.estimate(oracle.wire_statistics(p), s), runs
        )
        peers = oue_peers(batch[:size], runs)
        if not peers:
            print("    note: no peer importable; pass --peers <venv site-packages>")
        for peer, seconds in peers.items():
            print(
                f"    OUE n = {size:,}: Deniable from wire hex {ours:.3f} s; {peer} "
                f"from in-memory arrays {seconds:.3f} s; ratio {seconds / ours:.2f} "
                "(> 1: Deniable faster)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--peers", help="site-packages of a scratch venv with the peer libraries")
    parser.add_argument("--wire-only", action="store_true", help="only the wire rows")
    args = parser.parse_args()
    if args.peers:
        sys.path.append(args.peers)
    if args.wire_only:
        wire_rows(args.n, args.runs)
        return
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
    wire_rows(args.n, args.runs)


if __name__ == "__main__":
    main()
