"""Relay benchmark: intake, forward + decrypt, and the latency a batch window adds.

Starts, on 127.0.0.1 only and on fresh SQLite databases (``--postgres DSN`` for
PostgreSQL schemas instead), a real aggregator and a real relay (``serve``:
gunicorn + waitress, 2 workers each) relaying a survey of 10 yes/no questions,
shuffled per question, and prints:

1. **Relay intake**: sealed submissions (10 units each, pre-sealed before the
   clock starts) POSTed by 16 clients (4 processes x 4 threads, keep-alive) for
   ``--duration`` seconds, with the forwarder's window far away: sealed reports
   (units) per second, requests per second, p50/p99.  Targets: >= 5,000 reports/s, and
   the relay's p99 at most 3x the bare app's in the same run.
   Baseline in the same run: a bare Flask app under gunicorn (2 workers) that parses
   the same bodies and inserts the same blobs into SQLite (WAL, synchronous=FULL)
   with no validation, no rate limit, no enrolment.
2. **Forward + decrypt**: a relay batch of ``--batch`` sealed reports PUT to the
   aggregator (the relay's credential; HPKE open, validation, storage), timed to its
   acknowledgement, ``--repeat`` times after a warm-up that starts every serving
   process's decryption processes: reports per second of the median batch, and the
   aggregator's CPU time per report (read from /proc for its process tree) in the
   decryption processes and in the serving process.  Target >= 20,000 reports/s.
   Baselines in the same run: the same reports unsealed through the operator's bulk
   route (1,000 per request) on a survey without a relay, and a bare loop of
   ``deniable.sealing.open_sealed`` over the batch in this process (HPKE alone, one core).
3. **Added latency**: with a window of ``--window`` seconds (a one-question survey, one
   batch per window), the time from the relay's 202 for a batch's first and last
   submission until the results count them, sent right after the previous batch's
   results appeared, next to the time an unsealed report takes from its 201 to the
   results (the same aggregator).  Expected: about the window (the batch waits for
   it), plus a forwarder interval and the forward.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import secrets
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from servers import (  # sibling modules of this script
    HOST,
    cli,
    cpu_spent,
    free_port,
    key_document,
    process_tree,
    relay_surveys,
    serve,
    serve_program,
    stop,
    warmed,
)

QUESTIONS = 10
PROCESSES, THREADS = 4, 4


def definition(
    survey_id: str, relay_url: str | None, min_batch: int, questions: int = QUESTIONS
) -> dict[str, Any]:
    document = {
        "format": "deniable.survey/2",
        "id": survey_id,
        "title": f"Bench {survey_id}",
        "questions": [
            {"id": f"q{i}", "type": "yes_no", "text": f"Question {i}?", "epsilon": 1.0}
            for i in range(questions)
        ],
    }
    if relay_url:
        document["relay"] = {"url": relay_url, "min_batch": min_batch, "shuffle_unit": "question"}
    return document


def environments(work: Path, relay_url: str) -> tuple[dict[str, str], dict[str, str]]:
    """The aggregator's and the relay's settings for a run in ``work``: no rate limits,
    batches of 1,000 reports, and a relay that forms batches only when told (a day's window)."""
    aggregator_env = {
        "DENIABLE_HOME": str(work / "aggregator"),
        "DENIABLE_RATE_LIMIT_PER_ADDRESS": "0",
        "DENIABLE_MAX_BATCH": "1000",
        "DENIABLE_MAX_BODY_BYTES": str(8 << 20),
    }
    relay_env = {
        "DENIABLE_RELAY_HOME": str(work / "relay"),
        "DENIABLE_RELAY_PUBLIC_URL": relay_url,
        "DENIABLE_RELAY_WINDOW_SECONDS": "86400",
        "DENIABLE_RELAY_FORWARD_INTERVAL": "0.1",
        "DENIABLE_RELAY_RATE_LIMIT_PER_ADDRESS": "0",
    }
    return aggregator_env, relay_env


def create_surveys(
    work: Path, documents: Mapping[str, dict[str, Any]], aggregator_env: dict[str, str]
) -> None:
    """``deniable-aggregator create-survey`` for each definition (by survey id), from a file
    in ``work``."""
    for survey_id, document in documents.items():
        path = work / f"{survey_id}.json"
        path.write_text(json.dumps(document))
        cli("aggregator", ["create-survey", str(path)], aggregator_env)


def relay_credential(work: Path, relay_url: str, aggregator_env: dict[str, str]) -> str:
    """A new credential of the relay at ``relay_url``, also written to ``work``/credential
    (the file ``deniable-relay add-survey`` reads)."""
    credential = cli(
        "aggregator", ["relay", "credential", "--relay-url", relay_url], aggregator_env
    ).strip()
    (work / "credential").write_text(credential)
    return credential


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def sealed_bodies(survey_json: str, public_key: bytes, key_id: str, count: int) -> list[bytes]:
    """``count`` sealed submission bodies, as devices build them (CSPRNG noise, HPKE)."""
    from deniable import sealing
    from deniable.survey import Survey

    survey = Survey.from_json(survey_json)
    sizes = {q.id: sealing.unit_size(survey, q.id) for q in survey.questions}
    bodies = []
    for _ in range(count):
        units = []
        for question in survey.questions:
            report = {
                "id": str(uuid.uuid4()),
                "question": question.id,
                "payload": question.randomize(secrets.randbelow(2) == 1),
            }
            blob = sealing.seal(
                public_key,
                survey_id=survey.id,
                unit=question.id,
                plaintext=sealing.unit_body([report], question.id),
                size=sizes[question.id],
            )
            units.append({"unit": question.id, "sealed": b64(blob)})
        bodies.append(
            json.dumps({"format": "deniable.sealed/1", "key_id": key_id, "units": units}).encode()
        )
    return bodies


def _post_loop(port: int, path: str, bodies: list[bytes], stop_at: float) -> list[float]:
    connection = http.client.HTTPConnection(HOST, port, timeout=60)
    latencies = []
    index = 0
    while time.monotonic() < stop_at and index < len(bodies):
        started = time.perf_counter()
        connection.request("POST", path, bodies[index], {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        if response.status not in (201, 202):
            raise RuntimeError(f"POST {path}: HTTP {response.status}")
        latencies.append(time.perf_counter() - started)
        index += 1
    connection.close()
    return latencies


def _process(
    port: int, path: str, bodies: list[bytes], start_at: float, duration: float
) -> list[float]:
    while time.time() < start_at:
        time.sleep(0.005)
    stop_at = time.monotonic() + duration
    with ThreadPoolExecutor(THREADS) as pool:
        futures = [
            pool.submit(_post_loop, port, path, bodies[i::THREADS], stop_at) for i in range(THREADS)
        ]
        return [latency for future in futures for latency in future.result()]


def measure_intake(port: int, path: str, bodies: list[bytes], duration: float) -> dict[str, Any]:
    start_at = time.time() + 1.0
    with ProcessPoolExecutor(PROCESSES) as pool:
        futures = [
            pool.submit(_process, port, path, bodies[p::PROCESSES], start_at, duration)
            for p in range(PROCESSES)
        ]
        latencies = sorted(x for future in futures for x in future.result())
    if len(latencies) >= len(bodies):
        print("  (warning: every pre-sealed body was sent before the time was up)")
    return {
        "requests": len(latencies) / duration,
        "reports": QUESTIONS * len(latencies) / duration,
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p99_ms": 1000 * latencies[int(len(latencies) * 0.99)],
    }


def put_batch(
    port: int, survey_id: str, credential: str, blobs: list[bytes], real_units: int | None = None
) -> float:
    """PUT one relay batch of ``blobs`` for unit q0 (``real_units``: how many are respondents'
    when the rest are the relay's dummies); seconds to the aggregator's acknowledgement."""
    document: dict[str, Any] = {"format": "deniable.batch/1", "unit": "q0"}
    if real_units is not None:
        document["real_units"] = real_units
    document["sealed"] = [b64(b) for b in blobs]
    body = json.dumps(document).encode()
    connection = http.client.HTTPConnection(HOST, port, timeout=600)
    started = time.perf_counter()
    connection.request(
        "PUT",
        f"/api/v1/surveys/{survey_id}/batches/{secrets.token_hex(16)}",
        body,
        {"Content-Type": "application/json", "Authorization": f"Bearer {credential}"},
    )
    response = connection.getresponse()
    text = response.read()
    elapsed = time.perf_counter() - started
    if response.status != 201:
        raise SystemExit(f"PUT batch: HTTP {response.status} {text[:300]!r}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10.0, help="intake seconds (10)")
    parser.add_argument("--batch", type=int, default=20_000, help="forwarded batch size")
    parser.add_argument("--window", type=float, default=2.0, help="batch window, seconds (2)")
    parser.add_argument("--postgres", metavar="DSN", help="use PostgreSQL (fresh schemas)")
    parser.add_argument("--sections", default="123", help="which sections to run (123)")
    parser.add_argument(
        "--repeat", type=int, default=3, help="forwarded batches timed; the median is printed (3)"
    )
    args = parser.parse_args(argv)
    from deniable import sealing
    from deniable.keychain import decode_public_key

    work = Path(tempfile.mkdtemp(prefix="deniable-relay-bench-"))
    aggregator_port, relay_port, bare_port = free_port(), free_port(), free_port()
    relay_url = f"http://{HOST}:{relay_port}"
    if args.postgres:
        raise SystemExit("--postgres: not wired in this version; SQLite only")
    aggregator_env, relay_env = environments(work, relay_url)
    cli("aggregator", ["init"], aggregator_env)
    create_surveys(
        work,
        {
            "intake": definition("intake", relay_url, 1_000_000),
            "batch": definition("batch", relay_url, 1),
            "plain": definition("plain", None, 1),
            "window": definition("window", relay_url, 50, questions=1),  # one batch per window
        },
        aggregator_env,
    )
    credential = relay_credential(work, relay_url, aggregator_env)
    operator = cli("aggregator", ["token", "create"], aggregator_env).strip()
    processes = []
    try:
        processes.append(
            serve_program("aggregator", aggregator_port, aggregator_env, work / "aggregator.log")
        )
        key = key_document(aggregator_port)
        public = decode_public_key(key["encryption_key"]["public_key"], "key")
        key_id = key["encryption_key"]["key_id"]
        cli("relay", ["init"], relay_env)
        relay_surveys(
            aggregator_port, ("intake", "batch", "window"), work / "credential", key, relay_env
        )
        processes.append(serve_program("relay", relay_port, relay_env, work / "relay.log"))
        processes.append(
            serve(
                [
                    sys.executable,
                    "-m",
                    "gunicorn",
                    "--workers",
                    "2",
                    "--bind",
                    f"{HOST}:{bare_port}",
                    "--chdir",
                    str(Path(__file__).parent),
                    "bare_relay:bare_app()",
                ],
                {"BARE_DATABASE": str(work / "bare.db")},
                bare_port,
                work / "bare.log",
            )
        )

        if "1" in args.sections:
            survey_json = json.dumps(definition("intake", relay_url, 1_000_000))
            print(
                f"sealing {int(args.duration * 3000)} submissions of {QUESTIONS} units ...",
                flush=True,
            )
            with ProcessPoolExecutor(PROCESSES) as pool:
                count = int(args.duration * 3000) // PROCESSES
                chunks = pool.map(
                    sealed_bodies,
                    [survey_json] * PROCESSES,
                    [public] * PROCESSES,
                    [key_id] * PROCESSES,
                    [count] * PROCESSES,
                )
                bodies = [body for chunk in chunks for body in chunk]
            print("\n1. relay intake (sealed submissions of 10 units, 16 clients)")
            intake = "/api/v1/surveys/intake/sealed"
            real = measure_intake(relay_port, intake, bodies, args.duration)
            bare = measure_intake(bare_port, intake, bodies, args.duration)
            for name, figures in (("relay", real), ("bare app", bare)):
                print(
                    f"  {name:9} {figures['reports']:9,.0f} sealed reports/s "
                    f"({figures['requests']:,.0f} submissions/s), "
                    f"p50 {figures['p50_ms']:.1f} ms, p99 {figures['p99_ms']:.1f} ms"
                )
            print(f"  target >= 5,000 reports/s: {'met' if real['reports'] >= 5000 else 'NOT met'}")
            tail_met = real["p99_ms"] <= 3 * bare["p99_ms"]
            print(
                f"  target p99 <= 3x bare: {'met' if tail_met else 'NOT met'} "
                f"(relay {real['p99_ms']:.1f} ms, 3x bare {3 * bare['p99_ms']:.1f} ms)"
            )

        from deniable.survey import Survey

        survey = Survey.from_dict(definition("batch", relay_url, 1), resolved=False)
        question = survey.question("q0")
        if "2" in args.sections:
            print(f"\n2. forward + decrypt: one batch of {args.batch:,} sealed reports")
            size = sealing.unit_size(survey, "q0")
            reports = [
                {
                    "id": str(uuid.uuid4()),
                    "question": "q0",
                    "payload": question.randomize(secrets.randbelow(2) == 1),
                }
                for _ in range(args.batch)
            ]

            def sealed_batch(count: int) -> list[bytes]:
                return [
                    sealing.seal(
                        public,
                        survey_id="batch",
                        unit="q0",
                        size=size,
                        plaintext=sealing.unit_body([{**r, "id": str(uuid.uuid4())}], "q0"),
                    )
                    for r in reports[:count]
                ]

            # Warm-up (not timed): each serving process starts its decryption processes at its
            # first large batch; batches are sent until every serving process has them.
            root = processes[0].pid
            for _ in range(12):
                put_batch(aggregator_port, "batch", credential, sealed_batch(2000))
                if warmed(process_tree(root), root):
                    break
            elapsed_runs, decrypting_cpu, serving_cpu = [], [], []
            for _ in range(args.repeat):
                blobs = sealed_batch(args.batch)
                before = process_tree(root)
                elapsed_runs.append(put_batch(aggregator_port, "batch", credential, blobs))
                decrypting, serving = cpu_spent(before, process_tree(root))
                decrypting_cpu.append(decrypting)
                serving_cpu.append(serving)
            elapsed = sorted(elapsed_runs)[len(elapsed_runs) // 2]
            forward_rate = args.batch / elapsed
            # A relay forwards whatever devices sealed: one blob in 100 altered (dropped).
            altered = sealed_batch(args.batch)
            for index in range(0, len(altered), 100):
                altered[index] = altered[index][:-1] + bytes([altered[index][-1] ^ 1])
            altered_rate = args.batch / put_batch(aggregator_port, "batch", credential, altered)
            private = sealing.generate_private_key()
            probe = [
                sealing.seal(
                    sealing.public_bytes(private),
                    survey_id="batch",
                    unit="q0",
                    size=size,
                    plaintext=sealing.unit_body([r], "q0"),
                )
                for r in reports[:2000]
            ]
            started = time.perf_counter()
            for blob in probe:
                sealing.open_sealed(private, survey_id="batch", unit="q0", sealed=blob, size=size)
            open_rate = len(probe) / (time.perf_counter() - started)
            started = time.perf_counter()
            connection = http.client.HTTPConnection(HOST, aggregator_port, timeout=600)
            plain = [{**r, "question": "q0"} for r in reports]
            for start in range(0, len(plain), 1000):
                body = json.dumps(
                    {
                        "reports": [
                            {**r, "id": str(uuid.uuid4())} for r in plain[start : start + 1000]
                        ]
                    }
                ).encode()
                connection.request(
                    "POST",
                    "/api/v1/surveys/plain/reports/bulk",
                    body,
                    {"Content-Type": "application/json", "Authorization": f"Bearer {operator}"},
                )
                response = connection.getresponse()
                response.read()
                assert response.status == 201, response.status
            bulk_rate = len(plain) / (time.perf_counter() - started)
            print(
                f"  relay batch (HPKE open + validate + store) {forward_rate:9,.0f} reports/s "
                f"({elapsed:.2f} s; median of {args.repeat}: "
                f"{', '.join(f'{t:.2f}' for t in elapsed_runs)} s)"
            )
            if decrypting_cpu[0] or serving_cpu[0]:
                per = 1e6 / args.batch
                decrypt_us, serve_us = per * min(decrypting_cpu), per * min(serving_cpu)
                print(
                    f"  aggregator CPU per report (least of the runs): {decrypt_us:.1f} us in the "
                    f"decryption processes"
                    f" + {serve_us:.1f} us in the serving process = "
                    f"{(decrypt_us + serve_us) * 20_000 / 1e6:.2f} CPU-s per 20,000 reports "
                    f"({os.cpu_count()} cores)"
                )
            print(f"  the same, 1% of the blobs altered         {altered_rate:9,.0f} reports/s")
            print(f"  bulk route, same reports unsealed       {bulk_rate:9,.0f} reports/s")
            print(f"  bare HPKE open loop, one core          {open_rate:9,.0f} reports/s")
            print(f"  target >= 20,000 reports/s: {'met' if forward_rate >= 20000 else 'NOT met'}")

        if "3" in args.sections:
            print(f"\n3. added latency until results (window {args.window:g} s, min_batch 50)")
            # A fresh relay process with the short window (the first one's is a day long).
            stop(processes.pop(1))
            relay_env["DENIABLE_RELAY_WINDOW_SECONDS"] = str(args.window)
            processes.insert(
                1, serve_program("relay", relay_port, relay_env, work / "relay2.log", workers=1)
            )
            window_json = json.dumps(definition("window", relay_url, 50, questions=1))
            window_bodies = sealed_bodies(window_json, public, key_id, 100)
            relay = http.client.HTTPConnection(HOST, relay_port, timeout=60)
            aggregator = http.client.HTTPConnection(HOST, aggregator_port, timeout=60)

            def results_count(survey_id: str) -> int:
                aggregator.request("GET", f"/api/v1/surveys/{survey_id}/results")
                return json.loads(aggregator.getresponse().read())["n_reports"]

            def one_batch() -> tuple[float, float]:
                """Send min_batch submissions: seconds from the first and last 202 to results."""
                before = results_count("window")
                first = None
                for body in window_bodies[:50] if before == 0 else window_bodies[50:]:
                    relay.request(
                        "POST",
                        "/api/v1/surveys/window/sealed",
                        body,
                        {"Content-Type": "application/json"},
                    )
                    relay.getresponse().read()
                    first = first or time.perf_counter()
                last = time.perf_counter()
                while results_count("window") < before + 50:
                    time.sleep(0.02)
                done = time.perf_counter()
                marks.append(done)
                return done - first, done - last

            marks: list[float] = []
            one_batch()  # the first batch resets the unit's window, as in steady operation
            from_first, relayed_latency = one_batch()
            body = json.dumps(
                {
                    "reports": [
                        {
                            "id": str(uuid.uuid4()),
                            "question": "q0",
                            "payload": question.randomize(True),
                        }
                    ]
                }
            ).encode()
            before = results_count("plain")
            aggregator.request(
                "POST", "/api/v1/surveys/plain/reports", body, {"Content-Type": "application/json"}
            )
            aggregator.getresponse().read()
            acknowledged = time.perf_counter()
            while results_count("plain") < before + 1:
                time.sleep(0.005)
            direct_latency = time.perf_counter() - acknowledged
            print(
                f"  relayed: {from_first:.2f} s from a batch's first 202 to the results, "
                f"{relayed_latency:.2f} s from its last (window {args.window:g} s, forwarder "
                "interval 0.1 s)"
            )
            print(
                f"  a report that arrives just after a batch waits about the window: "
                f"{marks[1] - marks[0]:.2f} s from one batch's results to the next's"
            )
            print(
                f"  direct (no relay): {1000 * direct_latency:.1f} ms from the 201 to the results"
            )
    finally:
        for process in processes:
            stop(process)
    return 0


if __name__ == "__main__":
    sys.exit(main())
