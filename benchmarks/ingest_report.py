"""What benchmarks/ingest.py prints for one backend: its figures against the targets.

Targets: single-report ingest >= 70% of bare; bulk batches >= 50,000 reports/s and >= 0.7
of bare; results p50 < 50 ms at 1M reports; with the slow connections open /health p99
< 1 s and single-report ingest >= half its unloaded rate.
"""

from __future__ import annotations

from typing import Any

from load import BATCH, BATCH_CLIENTS, SINGLE_CLIENTS, SLOW_CONNECTIONS, TRICKLE_SECONDS

TARGET_SINGLE_RATIO = 0.70
TARGET_BATCH = 50_000
TARGET_BATCH_RATIO = 0.70
TARGET_RESULTS_P50_MS = 50.0


def verdict(ok: bool) -> str:
    return "meets target" if ok else "MISSES target"


def report(result: dict[str, Any], *, domain: int, epsilon: float) -> str:
    """One backend's figures (``ingest.run_backend``) against the targets, as printed."""
    single, batch, results = result["single"], result["batch"], result["results"]
    ratio = single["real"]["rate"] / single["bare"]["rate"]
    real_results = results["real"]
    lines = [
        f"== {result['backend']} (single_choice, d = {domain}, epsilon = {epsilon:g}, "
        f"mechanism {result['mechanism']}; real: gunicorn 2 waitress workers, bare: gunicorn "
        "2 sync workers)",
        f"single-report POSTs, {SINGLE_CLIENTS} clients:",
    ]
    for name in ("real", "bare"):
        s = single[name]
        lines.append(
            f"  {name:4}  {s['rate']:9,.0f} reports/s   p50 {s['p50_ms']:7.2f} ms   "
            f"p99 {s['p99_ms']:7.2f} ms   ({s['reports']:,} reports)"
        )
    lines.append(
        f"  ratio real/bare = {ratio:.3f}  (target >= {TARGET_SINGLE_RATIO:.2f}: "
        f"{verdict(ratio >= TARGET_SINGLE_RATIO)})"
    )
    lines.append(f"bulk route (operator token), batches of {BATCH:,}, {BATCH_CLIENTS} clients:")
    for name in ("real", "bare"):
        b = batch[name]
        lines.append(
            f"  {name:4}  {b['rate']:9,.0f} reports/s   ({b['reports']:,} reports in "
            f"{b['seconds']:.1f} s)"
        )
    batch_ratio = batch["real"]["rate"] / batch["bare"]["rate"]
    lines.append(
        f"  real vs target {TARGET_BATCH:,} reports/s: "
        f"{verdict(batch['real']['rate'] >= TARGET_BATCH)}; "
        f"ratio real/bare = {batch_ratio:.2f} (target >= {TARGET_BATCH_RATIO:.2f}: "
        f"{verdict(batch_ratio >= TARGET_BATCH_RATIO)})"
    )
    slow = result["slow"]
    kept = slow["single"]["rate"] / slow["unloaded"]["rate"]
    lines.append(
        f"with {SLOW_CONNECTIONS} slow connections open (headers stalled / body a byte "
        f"every {TRICKLE_SECONDS:g} s):"
    )
    lines.append(
        f"  /health  p50 {slow['health']['p50_ms']:7.2f} ms   p99 "
        f"{slow['health']['p99_ms']:7.2f} ms   ({slow['health']['count']} calls)  "
        f"(target p99 < 1000 ms: {verdict(slow['health']['p99_ms'] < 1000)})"
    )
    lines.append(
        f"  single   {slow['single']['rate']:9,.0f} reports/s = {kept:.2f} of the "
        f"{slow['unloaded']['rate']:,.0f}/s measured just before, without them "
        f"(target >= 0.50: {verdict(kept >= 0.5)}; "
        f"{slow['single']['rate'] / single['real']['rate']:.2f} of the first "
        f"single-report figure, on the fresh database)"
    )
    lines.append(f"results at {real_results['n_reports']:,} stored reports:")
    lines.append(
        f"  real  first call (folds every pending report): {real_results['first_ms']:,.0f} ms"
    )
    steady = real_results["steady"]
    lines.append(
        f"  real  steady, no new reports:  p50 {steady['p50_ms']:7.2f} ms   "
        f"p99 {steady['p99_ms']:7.2f} ms   ({steady['count']} calls)  "
        f"(target p50 < {TARGET_RESULTS_P50_MS:g} ms: "
        f"{verdict(steady['p50_ms'] < TARGET_RESULTS_P50_MS)})"
    )
    live = real_results["live"]
    if live:
        lines.append(
            f"  real  live, +{BATCH:,} reports before each call: p50 {live['p50_ms']:7.2f}"
            f" ms   p99 {live['p99_ms']:7.2f} ms   ({live['count']} calls)  "
            f"(target: {verdict(live['p50_ms'] < TARGET_RESULTS_P50_MS)})"
        )
    bare = results["bare"]
    lines.append(
        f"  bare  GROUP BY scan: p50 {bare['steady']['p50_ms']:7.2f} ms   "
        f"p99 {bare['steady']['p99_ms']:7.2f} ms   ({bare['steady']['count']} calls)"
    )
    if "token" in single:
        tokens = result["tokens"]
        lines.append(
            f"token-required path (a fresh enrolment token per request; "
            f"{tokens['issued']:,} tokens issued in {tokens['issue_seconds']:.1f} s):"
        )
        kinds = (("single", single, f"single, {SINGLE_CLIENTS} clients"),)
        for kind, figures, label in kinds:
            opened, gated = figures["real"], figures["token"]
            extra = (
                f"   p50 {gated['p50_ms']:7.2f} ms   p99 {gated['p99_ms']:7.2f} ms"
                if kind == "single"
                else ""
            )
            lines.append(
                f"  {label}: open {opened['rate']:9,.0f} reports/s   token "
                f"{gated['rate']:9,.0f} reports/s{extra}   "
                f"ratio token/open = {gated['rate'] / opened['rate']:.3f}"
            )
    return "\n".join(lines)
