"""Shuffling amplification: the ε table, and what computing it costs.

Run: ``.venv/bin/python benchmarks/shuffle.py``.  Prints

* the central ε of a generic ε0-LDP randomizer at δ = 1e-6 (the tight bound of
  FMT23 / Wang et al. 2024, ``deniable.shuffle.central_epsilon``) for ε0 in
  {0.5, 1, 2, 4, 8} and batches of 1,000 to 1,000,000, beside FMT21's closed form
  (the peer figure; "-" where its validity condition fails);
* the time of each ``central_epsilon`` cold (nothing cached) and warm (cached),
  and of a results call for a 10-question relayed survey, cold and warm;
* the time of ``local_epsilon_for`` (the planner's inverse);
* one δ(ε) evaluation by the row recurrence against a bare baseline that sums the
  hockey-stick divergence cell by cell over the (A, B) grid with numpy.

No assertions: figures only (the tests check the values).
"""

from __future__ import annotations

import math
import time

import numpy as np

from deniable import shuffle
from deniable.shuffle import central_epsilon, delta_for, fmt21_closed_form, local_epsilon_for

DELTA = 1e-6
EPSILONS0 = (0.5, 1.0, 2.0, 4.0, 8.0)
BATCHES = (1_000, 10_000, 100_000, 1_000_000)


def clear() -> None:
    shuffle._central_epsilon.cache_clear()
    shuffle._local_epsilon_for.cache_clear()
    shuffle._rows.cache_clear()


def timed(function, *args, **keywords) -> tuple[float, float]:
    start = time.perf_counter()
    value = function(*args, **keywords)
    return value, time.perf_counter() - start


def table() -> None:
    print(f"central epsilon at delta = {DELTA:g} (tight; FMT21 closed form), cold ms / warm us")
    header = f"{'eps0':>5} " + " ".join(f"{'n = ' + format(n, ','):>33}" for n in BATCHES)
    print(header)
    for epsilon0 in EPSILONS0:
        cells = []
        for n in BATCHES:
            clear()
            tight, cold = timed(central_epsilon, epsilon0, n, DELTA)
            _, warm = timed(central_epsilon, epsilon0, n, DELTA)
            closed = fmt21_closed_form(epsilon0, n, DELTA)
            closed_text = "-" if closed is None else f"{closed:.4f}"
            cells.append(f"{tight:.4f} {closed_text:>6} {1000 * cold:6.1f}ms {1e6 * warm:5.1f}us")
        print(f"{epsilon0:>5g} " + " ".join(f"{cell:>33}" for cell in cells))


def results_call() -> None:
    questions = [(0.5 + 0.35 * i, 1_000 + 997 * i) for i in range(10)]  # (ε0, smallest batch)
    clear()
    start = time.perf_counter()
    for epsilon0, batch in questions:
        shuffle.amplification(epsilon0, batch, DELTA)
    cold = time.perf_counter() - start
    start = time.perf_counter()
    for epsilon0, batch in questions:
        shuffle.amplification(epsilon0, batch, DELTA)
    warm = time.perf_counter() - start
    print(f"results call, 10 questions: cold {1000 * cold:.1f} ms, warm {1000 * warm:.3f} ms")


def inverse() -> None:
    for target, n in ((0.5, 10_000), (0.1, 100_000), (1.0, 1_000)):
        clear()
        value, cold = timed(local_epsilon_for, target, n, DELTA)
        _, warm = timed(local_epsilon_for, target, n, DELTA)
        print(
            f"local_epsilon_for({target:g}, n = {n:,}) = {value:.4f}: cold {1000 * cold:.1f} ms, "
            f"warm {1e6 * warm:.1f} us"
        )


def grid_delta(epsilon: float, epsilon0: float, n: int) -> float:
    """Bare baseline: the hockey-stick divergence summed over every (a, b) cell."""
    p = math.exp(epsilon0)
    r = 1 / (p + 1)
    a = np.arange(n + 1)[:, None]
    b = np.arange(n + 1)[None, :]
    inside = a + b <= n
    log_factorial = np.array([math.lgamma(k + 1) for k in range(n + 1)])
    rest = np.where(inside, n - a - b, 0)
    log_m = (
        log_factorial[n]
        - log_factorial[a]
        - log_factorial[b]
        - log_factorial[rest]
        + (a + b) * math.log(r)
        + rest * math.log1p(-2 * r)
    )
    m = np.where(inside, np.exp(log_m), 0.0)
    e = math.exp(epsilon)
    h = (p - e) * a + (1 - p * e) * b  # α = r: P0 − e^ε P1 = M·h/n
    return float(np.sum(m * np.maximum(h, 0))) / n


def baseline() -> None:
    for n in (1_000, 4_000):
        clear()
        ours, ours_time = timed(delta_for, 0.3, 2.0, n)
        grid, grid_time = timed(grid_delta, 0.3, 2.0, n)
        print(
            f"delta(0.3) at eps0 = 2, n = {n:,}: rows {ours:.6e} in {1000 * ours_time:.1f} ms; "
            f"cell grid {grid:.6e} in {1000 * grid_time:.0f} ms"
        )


if __name__ == "__main__":
    table()
    results_call()
    inverse()
    baseline()
