"""Point estimates at small n: mean squared error of raw, Norm-Sub, projection and the MLE (IBU).

Run: ``.venv/bin/python benchmarks/postprocess.py [--collections 2000]``.

For GRR (and binary RR, d = 2) at ε in {0.5, 1, 2} and d in {2, 5, 16}, with
n in {100, 1,000, 10,000} respondents whose answers follow a Zipf truth
(shares ∝ 1/rank, s = 1) or the uniform one, prints the mean squared error
summed over categories, sum_v (f̂_v - f_v)², averaged over ``--collections``
simulated collections (reports drawn exactly: GRR counts are multinomial given
the answers), for:

* ``raw``: the unbiased estimate (Wang et al. 2017);
* ``norm_sub``: Norm-Sub (Wang, Lopuhaä-Zwakenberg et al., NDSS 2020);
* ``projected``: Euclidean projection onto the simplex;
* ``ibu``: the maximum-likelihood estimate, IBU's fixed point (Agrawal &
  Aggarwal 2001; ``deniable.postprocess.iterative_bayesian_update``);

and ``ibu/raw`` and ``ibu/norm_sub``, the MLE's error relative to each (< 1:
the MLE is better).  f_v is the respondents' own share (finite population).
The MLE is published only for GRR-shaped reports, whose likelihood depends on
the counts alone (docs/design.md).  No assertions: figures only.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from text_table import table

from deniable import postprocess
from deniable.mechanisms import GRR, BinaryRR

SIZES = (100, 1_000, 10_000)
EPSILONS = (0.5, 1.0, 2.0)
DOMAINS = (2, 5, 16)


def truth_counts(kind: str, d: int, n: int) -> np.ndarray:
    weights = 1.0 / np.arange(1, d + 1) if kind == "zipf" else np.ones(d)
    shares = weights / weights.sum()
    counts = np.floor(shares * n).astype(np.int64)
    counts[: n - counts.sum()] += 1
    return counts


def simulate(oracle: GRR, holders: np.ndarray, collections: int, rng) -> np.ndarray:
    """Report counts: holders of each value report it w.p. p*, each other value w.p. q*."""
    d = holders.size
    total = np.zeros((collections, d), dtype=np.int64)
    for value, count in enumerate(holders):
        law = np.full(d, oracle.q_star)
        law[value] = oracle.p_star
        total += rng.multinomial(count, law / law.sum(), size=collections)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261126)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    rows = []
    for d in DOMAINS:
        for epsilon in EPSILONS:
            oracle = BinaryRR(epsilon=epsilon) if d == 2 else GRR(epsilon=epsilon, domain_size=d)
            for kind in ("zipf", "uniform"):
                for n in SIZES:
                    holders = truth_counts(kind, d, n)
                    truth = holders / n
                    counts = simulate(oracle, holders, args.collections, rng)
                    raw = oracle.estimate(counts, n)
                    methods = {
                        "raw": raw,
                        "norm_sub": np.array([postprocess.norm_sub(row) for row in raw]),
                        "projected": np.array([postprocess.project_to_simplex(r) for r in raw]),
                        "ibu": np.array(
                            [
                                postprocess.iterative_bayesian_update(
                                    row, oracle.p_star, oracle.q_star
                                )
                                for row in counts
                            ]
                        ),
                    }
                    mse = {
                        k: float(((v - truth) ** 2).sum(axis=1).mean()) for k, v in methods.items()
                    }
                    rows.append(
                        [
                            oracle.name,
                            str(d),
                            f"{epsilon:g}",
                            kind,
                            f"{n:,}",
                            *(f"{mse[k]:.3g}" for k in methods),
                            f"{mse['ibu'] / mse['raw']:.2f}",
                            f"{mse['ibu'] / mse['norm_sub']:.2f}",
                        ]
                    )
    headers = [
        "mechanism",
        "d",
        "eps",
        "truth",
        "n",
        "raw",
        "norm_sub",
        "projected",
        "ibu",
        "ibu/raw",
        "ibu/norm_sub",
    ]
    print(
        f"Mean squared error summed over categories, {args.collections} collections per row "
        "(respondents' own shares; raw is unbiased, the others are distributions)"
    )
    print(table(headers, rows))
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
