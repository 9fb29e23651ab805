"""Relay noise (the augmented shuffle): accuracy, robustness, dummies, and the relay's rates.

Run: ``.venv/bin/python benchmarks/relay_noise.py`` (``--sections 1234``).  The relay adds
dummy reports to every batch (Murakami, Sei and Eriguchi, arXiv 2504.07362;
``deniable.dummies``), so the central ε comes from the dummies and the device may randomize
with a large ε0.  Prints:

1. **Accuracy**, at β = 0.05, central ε = 1, δ = 1e-6, ε0 <= 8, the narrowest published
   interval, worst case over the true shares, one batch of n: the planner's answer
   (``deniable.relay_noise_plan``: ε0, both calibrated laws, dummies per batch, half-width)
   against the targets (yes/no n = 100 <= ±7 points, n = 500 <= ±1.6; 5-option single choice
   per option n = 100 <= ±8), beside today's relay (no dummies, the ε0 the shuffle bound
   allows) and local DP alone (ε = 1 on the device).  A simulation (numpy generator, fixed
   seed) of 20,000 surveys checks the published half-width's coverage.
2. **Robustness**: how far one fake report moves a category's estimated count, with relay
   noise (ε0 of the plan) and with local DP alone at the same central ε.
3. **Dummies per batch** for each question, and the cost of a 1,024-option question:
   dummies, bytes forwarded, the relay's time to seal them and the aggregator's to open them
   (HPKE, one core, this process), the half-width and the respondents for ±5 points.
4. **The relay's rates** with noise on, against ``benchmarks/relay.py`` without (its
   functions, imported): intake of sealed submissions, and forward + decrypt of one batch
   (its dummies drawn and sealed by the relay's own ``deniable.relay.noise`` where the
   checkout has it, else the same steps here, then PUT with ``real_units``); then batches of
   100 through the relay's own forwarder with a 1 s window, to the results, which must count
   the respondents only (with the relay's noise, the dummies are reported beside them).

No assertions: figures only (tests/shared/test_planner.py checks the planner).
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import tempfile
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from servers import (  # noqa: E402
    HOST,
    cli,
    free_port,
    key_document,
    relay_surveys,
    serve_program,
    stop,
)

from deniable import dummies, sealing  # noqa: E402
from deniable.mechanisms import GRR  # noqa: E402
from deniable.relay_noise_plan import (  # noqa: E402
    LAW_FAMILIES,
    noise_mechanism,
    noise_mechanisms,
    relay_noise_plan,
)
from relay import (  # noqa: E402  (sibling modules of this script)
    PROCESSES,
    create_surveys,
    definition,
    environments,
    measure_intake,
    put_batch,
    relay_credential,
    sealed_bodies,
)

CENTRAL_EPSILON, DELTA, BETA = 1.0, 1e-6, 0.05
TARGETS = (  # (question type, options, n, target half-width)
    ("yes_no", None, 100, 0.07),
    ("yes_no", None, 500, 0.016),
    ("single_choice", 5, 100, 0.08),
)
SURVEYS = 20_000
WINDOW_BATCH, WINDOW_SECONDS, WINDOW_REPEAT = 100, 1.0, 5  # batches through the relay


def points(share: float | None) -> str:
    return "-" if share is None else f"±{100 * share:.1f}"


def simulate(result: Any, surveys: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """(|estimate - truth| of the first category, the share of batches whose *published*
    interval for it covers the truth) over ``surveys`` simulated noised batches of the plan's
    n reports (truth: half hold it, the rest spread evenly): the mechanism's own randomizer
    and estimator, the chosen law's exact probabilities, and the aggregator's interval with
    the dummies (``deniable.noised``; the exact tail inverts the observed count's law)."""
    from deniable import exact_tail
    from deniable.intervals import EXACT_TAIL, family_interval
    from deniable.noised import DummyNoise, noised_score_model

    n = result.n
    mechanism = GRR(epsilon=result.local_epsilon, domain_size=result.options or 2)
    d = mechanism.domain_size
    values = np.concatenate([np.zeros(n // 2, np.int64), 1 + np.arange(n - n // 2) % (d - 1)])
    truth = np.mean(values == 0)
    law = result.chosen.law
    model = noised_score_model(mechanism, n, DummyNoise(law=law, batches=1))
    pmf = np.asarray(law.pmf(), dtype=np.float64)
    errors, covered = [], 0
    for start in range(0, surveys, 2000):
        size = min(2000, surveys - start)
        reports = mechanism.randomize_many(np.tile(values, size), rng).reshape(size, n)
        counts = np.stack([np.bincount(row, minlength=d) for row in reports]).astype(float)
        counts += rng.choice(pmf.size, size=(size, d), p=pmf / pmf.sum())
        estimate = mechanism.estimate(dummies.debiased_counts(counts, law), n)[:, 0]
        errors.append(np.abs(estimate - truth))
        if result.chosen.interval == EXACT_TAIL:
            [(low, high)] = exact_tail.interval(model.tail, counts[:, 0], n, (BETA,))
        else:
            theta = (estimate - model.origin) / model.scale
            low, high = family_interval(result.chosen.interval, theta, n, model, BETA)
            low, high = model.origin + model.scale * low, model.origin + model.scale * high
        covered += int(np.sum((low <= truth) & (truth <= high)))
    return np.concatenate(errors), covered / surveys


def accuracy() -> dict[tuple, Any]:
    print(
        f"1. accuracy: central epsilon {CENTRAL_EPSILON:g}, delta {DELTA:g}, beta {BETA:g}, "
        "epsilon0 <= 8, one batch of n, worst case over the true shares"
    )
    rng = np.random.default_rng(20260428)
    plans = {}
    for question, options, n, target in TARGETS:
        result = relay_noise_plan(
            question, central_epsilon=CENTRAL_EPSILON, delta=DELTA, batch=n, options=options
        )
        plans[(question, options, n)] = result
        chosen = result.chosen
        name = question + (f" ({options} options, per option)" if options else "")
        met = "met" if chosen.half_width <= target else "NOT met"
        print(f"\n  {name}, n = {n}: target {points(target)} points: {met}")
        print(
            f"    relay noise: epsilon0 {result.local_epsilon:g} ({result.mechanism}), "
            f"{chosen.family} law, {chosen.dummies_per_batch:,.0f} dummies per batch: "
            f"{points(chosen.half_width)} points ({chosen.interval})"
        )
        for law in result.laws:
            print(
                f"      {law.family:9} {law.law.to_dict()}: {law.dummies_per_batch:7,.0f} "
                f"dummies per batch, variance {law.law.variance:.3g} per value, "
                f"{points(law.half_width)} ({law.interval}), central epsilon "
                f"{law.central_epsilon:.4g}"
            )
        print(
            f"    today's relay (no dummies, epsilon0 {result.relay_only_local_epsilon:g}): "
            f"{points(result.relay_only_half_width)}; local DP alone (epsilon "
            f"{CENTRAL_EPSILON:g} on the device): {points(result.local_only_half_width)}"
        )
        errors, coverage = simulate(result, SURVEYS, rng)
        print(
            f"    simulated ({SURVEYS:,} batches, seeded): 95th percentile of |error| "
            f"{points(float(np.quantile(errors, 0.95)))}; the published {chosen.interval} "
            f"interval covered the truth in {100 * coverage:.2f}% (at least "
            f"{100 * (1 - BETA):g}% expected)"
        )
    return plans


def robustness() -> None:
    print(
        "\n2. robustness: how far one fake report moves a category's estimated count "
        f"(central epsilon {CENTRAL_EPSILON:g})"
    )
    for question, options in (("yes_no", None), ("single_choice", 5), ("single_choice", 10)):
        result = relay_noise_plan(
            question, central_epsilon=CENTRAL_EPSILON, delta=DELTA, batch=100, options=options
        )
        name = question + (f", {options} options" if options else "")
        print(
            f"  {name:22} relay noise (epsilon0 {result.local_epsilon:g}): "
            f"{result.fake_report_shift:.3f} counts; local DP alone (epsilon "
            f"{CENTRAL_EPSILON:g}): {result.local_only_fake_report_shift:.2f} counts"
        )


def seal_dummies(
    public: bytes, survey_id: str, question: Any, size: int, law: dummies.DummyLaw
) -> list[bytes]:
    """One batch's dummies: the relay's own code (``deniable.relay.noise``) where this
    checkout has it; else the same steps in this process (D_y ~ law from the CSPRNG for each
    output report y, each sealed to the aggregator's key exactly like a device's unit)."""
    if RelayDummies is not None:
        return RelayDummies(survey=SURVEYS_BY_ID[survey_id], law=law).draw(question.id, public)
    outputs = question.oracle.output_reports()
    blobs = []
    for report, count in zip(outputs, law.sample_values(len(outputs)), strict=True):
        for _ in range(count):
            body = {"id": str(uuid.uuid4()), "question": question.id, "payload": report}
            blobs.append(
                sealing.seal(
                    public,
                    survey_id=survey_id,
                    unit=question.id,
                    plaintext=sealing.unit_body([body], question.id),
                    size=size,
                )
            )
    return blobs


SURVEYS_BY_ID: dict[str, Any] = {}  # the parsed surveys whose dummies are drawn


try:  # the relay's dummies (relay noise on the relay side)
    from deniable.relay.noise import Dummies as RelayDummies
except ImportError:
    RelayDummies = None


def dummy_costs() -> None:
    from deniable.survey import Survey

    print(f"\n3. dummies per batch (central epsilon {CENTRAL_EPSILON:g}, delta {DELTA:g})")
    for question, options in (
        ("yes_no", None),
        ("single_choice", 5),
        ("multiple_choice", 5),
        ("single_choice", 1024),
        ("multiple_choice", 1024),
    ):
        mechanism = noise_mechanism(
            question, noise_mechanisms(question, options)[0], epsilon=8, options=options
        )
        values = len(mechanism.output_reports())
        name = question + (f", {options} options" if options else "")
        laws = ", ".join(
            f"{family} {values * dummies.calibrate(CENTRAL_EPSILON, DELTA, family).law.mean:,.0f}"
            for family in LAW_FAMILIES
        )
        print(f"  {name:28} {mechanism.name:16} {values:5,} output values: {laws}")

    print("\n  the cost of a 1,024-option single-choice question")
    private = sealing.generate_private_key()
    public = sealing.public_bytes(private)
    document = {
        "format": "deniable.survey/2",
        "id": "wide",
        "title": "Wide",
        "questions": [
            {
                "id": "q0",
                "type": "single_choice",
                "text": "Which one?",
                "options": [f"option {i}" for i in range(1024)],
                "epsilon": 8.0,
                "mechanism": "grr",
            }
        ],
    }
    survey = Survey.from_dict(document, resolved=False)
    SURVEYS_BY_ID["wide"] = survey
    question = survey.question("q0")
    size = sealing.unit_size(survey, "q0")
    for n in (100, 500):
        result = relay_noise_plan(
            "single_choice",
            central_epsilon=CENTRAL_EPSILON,
            delta=DELTA,
            batch=n,
            options=1024,
            n=n,
        )
        for law in result.laws:
            threshold, _ = dummies.plausibility_threshold(law.law, law.output_values)
            print(
                f"    n = {n}, {law.family:9}: {law.dummies_per_batch:8,.0f} dummies per batch "
                f"({law.dummies_per_batch / n:,.0f} per respondent), half-width "
                f"{points(law.half_width)} points ({law.interval}), {law.respondents:,} "
                f"respondents for ±5 in batches of {n}, {law.respondents_one_batch:,} in one; "
                f"implausible below {threshold:,} dummies"
            )
        print(
            f"      without dummies at the same central epsilon: today's relay "
            f"{points(result.relay_only_half_width)}, local DP alone "
            f"{points(result.local_only_half_width)}"
        )
    law = dummies.calibrate(CENTRAL_EPSILON, DELTA, "geometric").law
    started = time.process_time()
    blobs = seal_dummies(public, "wide", question, size, law)
    sealed = time.process_time() - started
    started = time.process_time()
    for blob in blobs[:2000]:
        sealing.open_sealed(private, survey_id="wide", unit="q0", sealed=blob, size=size)
    opened = (time.process_time() - started) * len(blobs) / min(len(blobs), 2000)
    print(
        f"    one batch's geometric dummies: {len(blobs):,} sealed units of {len(blobs[0]):,} "
        f"bytes = {len(blobs) * len(blobs[0]) / 1e6:.1f} MB forwarded; CPU to seal them (the "
        f"relay) {sealed:.2f} s, to open them (the aggregator) {opened:.2f} s, one core each"
    )


def noised(document: dict[str, Any]) -> dict[str, Any]:
    law = dummies.calibrate(CENTRAL_EPSILON, DELTA, "geometric").law
    document["relay"]["noise"] = {
        "epsilon": CENTRAL_EPSILON,
        "delta": DELTA,
        "law": law.to_dict(),
    }
    return document


def rates(duration: float, batches: tuple[int, ...], repeat: int) -> None:
    """Intake and forward with noise on, against benchmarks/relay.py's figures without."""
    from deniable.keychain import decode_public_key
    from deniable.survey import Survey

    print("\n4. the relay's rates, with relay noise and without (benchmarks/relay.py)")
    work = Path(tempfile.mkdtemp(prefix="deniable-relay-noise-bench-"))
    aggregator_port, relay_port = free_port(), free_port()
    relay_url = f"http://{HOST}:{relay_port}"
    aggregator_env, relay_env = environments(work, relay_url)
    cli("aggregator", ["init"], aggregator_env)
    surveys = {
        "intake": definition("intake", relay_url, 1_000_000),
        "intake-noised": noised(definition("intake-noised", relay_url, 1_000_000)),
        "batch": definition("batch", relay_url, 1),
        "batch-noised": noised(definition("batch-noised", relay_url, 1)),
        "window": definition("window", relay_url, WINDOW_BATCH, questions=1),
        "window-noised": noised(definition("window-noised", relay_url, WINDOW_BATCH, questions=1)),
    }
    create_surveys(work, surveys, aggregator_env)
    credential = relay_credential(work, relay_url, aggregator_env)
    processes = []
    try:
        processes.append(
            serve_program("aggregator", aggregator_port, aggregator_env, work / "aggregator.log")
        )
        key = key_document(aggregator_port)
        public = decode_public_key(key["encryption_key"]["public_key"], "key")
        key_id = key["encryption_key"]["key_id"]
        cli("relay", ["init"], relay_env)
        relay_surveys(aggregator_port, surveys, work / "credential", key, relay_env)
        processes.append(serve_program("relay", relay_port, relay_env, work / "relay.log"))
        count = int(duration * 3000) // PROCESSES
        print(f"  intake: sealed submissions of 10 units, 16 clients, {duration:g} s each")
        for survey_id in ("intake", "intake-noised"):
            survey_json = json.dumps(surveys[survey_id])
            with ProcessPoolExecutor(PROCESSES) as pool:
                chunks = pool.map(
                    sealed_bodies,
                    [survey_json] * PROCESSES,
                    [public] * PROCESSES,
                    [key_id] * PROCESSES,
                    [count] * PROCESSES,
                )
                bodies = [body for chunk in chunks for body in chunk]
            path = f"/api/v1/surveys/{survey_id}/sealed"
            figures = measure_intake(relay_port, path, bodies, duration)
            label = "with noise" if "noised" in survey_id else "without"
            print(
                f"    {label:10} {figures['reports']:9,.0f} sealed reports/s "
                f"({figures['requests']:,.0f} submissions/s), p50 {figures['p50_ms']:.1f} ms, "
                f"p99 {figures['p99_ms']:.1f} ms"
            )

        print(
            "  forward + decrypt of one batch of a yes/no question (dummies drawn and sealed "
            "as the relay does, in this process, then PUT with real_units)"
        )
        survey = Survey.from_dict(surveys["batch-noised"], resolved=False)
        SURVEYS_BY_ID["batch-noised"] = survey
        question = survey.question("q0")
        size = sealing.unit_size(survey, "q0")
        law = dummies.calibrate(CENTRAL_EPSILON, DELTA, "geometric").law

        def real_units(survey_id: str, count: int) -> list[bytes]:
            return [
                sealing.seal(
                    public,
                    survey_id=survey_id,
                    unit="q0",
                    size=size,
                    plaintext=sealing.unit_body(
                        [
                            {
                                "id": str(uuid.uuid4()),
                                "question": "q0",
                                "payload": question.randomize(secrets.randbelow(2) == 1),
                            }
                        ],
                        "q0",
                    ),
                )
                for _ in range(count)
            ]

        for _ in range(3):  # warm-up: the serving processes start their decryption processes
            put_batch(aggregator_port, "batch", credential, real_units("batch", 2000))
        source = "the relay's deniable.relay.noise" if RelayDummies else "stand-in steps"
        print(f"    (dummies from {source}; median of {repeat} runs each)")
        for batch in batches:
            plain_rates, noised_rates, made, acknowledged, counts = [], [], [], [], []
            for _ in range(repeat):
                plain = real_units("batch", batch)
                plain_rates.append(batch / put_batch(aggregator_port, "batch", credential, plain))
                blobs = real_units("batch-noised", batch)
                started = time.perf_counter()
                added = seal_dummies(public, "batch-noised", question, size, law)
                made.append(time.perf_counter() - started)
                acknowledged.append(
                    put_batch(
                        aggregator_port,
                        "batch-noised",
                        credential,
                        blobs + added,
                        real_units=batch,
                    )
                )
                counts.append(len(added))
                noised_rates.append(batch / (made[-1] + acknowledged[-1]))
            print(
                f"    batch of {batch:6,}: without {median(plain_rates):9,.0f} real reports/s; "
                f"with noise {median(noised_rates):9,.0f} real reports/s "
                f"({median(counts):.0f} dummies drawn and sealed in {1000 * median(made):.1f} ms, "
                f"the batch acknowledged in {1000 * median(acknowledged):.0f} ms)"
            )

        print(
            f"  through the relay's own forwarder: {WINDOW_BATCH} submissions of a one-question "
            f"survey (min_batch {WINDOW_BATCH}, window {WINDOW_SECONDS:g} s), from the last 202 "
            "until the results count them"
        )
        stop(processes.pop(1))
        relay_env["DENIABLE_RELAY_WINDOW_SECONDS"] = str(WINDOW_SECONDS)
        processes.insert(
            1, serve_program("relay", relay_port, relay_env, work / "relay2.log", workers=1)
        )
        for survey_id in ("window", "window-noised"):
            survey_json = json.dumps(surveys[survey_id])
            times, counted, stored = [], 0, 0
            for _ in range(WINDOW_REPEAT):
                elapsed, counted, stored = through_the_relay(
                    survey_id, survey_json, public, key_id, relay_port, aggregator_port, counted
                )
                times.append(elapsed)
            label = "with noise" if "noised" in survey_id else "without"
            print(
                f"    {label:10} least {min(times):.2f} s, median {median(times):.2f} s over "
                f"{WINDOW_REPEAT} batches (each waits up to the window); the results count "
                f"{counted} respondents, {stored} dummies stored beside them"
            )
    finally:
        for process in processes:
            stop(process)


def through_the_relay(
    survey_id: str,
    survey_json: str,
    public: bytes,
    key_id: str,
    relay_port: int,
    aggregator_port: int,
    before: int,
) -> tuple[float, int, int]:
    """(seconds from the last submission's 202 until the results count all of them,
    respondents counted, dummies stored) for one batch of WINDOW_BATCH submissions sent to
    the relay; ``before``: the respondents the results counted already."""
    import http.client

    bodies = sealed_bodies(survey_json, public, key_id, WINDOW_BATCH)
    relay = http.client.HTTPConnection(HOST, relay_port, timeout=60)
    aggregator = http.client.HTTPConnection(HOST, aggregator_port, timeout=60)
    for body in bodies:
        relay.request(
            "POST",
            f"/api/v1/surveys/{survey_id}/sealed",
            body,
            {"Content-Type": "application/json"},
        )
        response = relay.getresponse()
        response.read()
        if response.status != 202:
            raise SystemExit(f"relay intake: HTTP {response.status}")
    last = time.perf_counter()
    deadline = last + 120
    while time.perf_counter() < deadline:
        aggregator.request("GET", f"/api/v1/surveys/{survey_id}/results")
        results = json.loads(aggregator.getresponse().read())
        if results["n_reports"] >= before + WINDOW_BATCH:
            elapsed = time.perf_counter() - last
            stored = (results.get("relay") or {}).get("dummies", 0)
            return elapsed, results["n_reports"], stored
        time.sleep(0.02)
    raise SystemExit(f"{survey_id}: the batch never reached the results")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sections", default="1234", help="which sections to run (1234)")
    parser.add_argument("--duration", type=float, default=5.0, help="intake seconds (5)")
    parser.add_argument(
        "--batches", default="100,500,20000", help="forwarded batch sizes (100,500,20000)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="forwarded batches per size (3)")
    args = parser.parse_args(argv)
    if "1" in args.sections:
        accuracy()
    if "2" in args.sections:
        robustness()
    if "3" in args.sections:
        dummy_costs()
    if "4" in args.sections:
        rates(args.duration, tuple(int(b) for b in args.batches.split(",")), args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
