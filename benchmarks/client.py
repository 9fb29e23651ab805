"""Client benchmark: single-answer latency per mechanism, and end-to-end respondents/s.

1. Latency of one real answer without network: ``oracle.randomize`` with the OS
   CSPRNG followed by ``oracle.encode``, for every mechanism (categorical ones at
   domain size 16, numeric ones on [0, 100], ε = 1), plus a longitudinal question
   through the client's own ``randomize_answers`` (HMAC-derived permanent response
   + CSPRNG instantaneous one) and the whole demo survey.  Median and p99 in µs.
2. End to end against a local aggregator (``deniable-aggregator serve``, gunicorn,
   2 workers, fresh SQLite file, 127.0.0.1):
   * ``deniable simulate`` (SIMULATION: seeded numpy noise, batches of 500
     reports) for ``--respondents`` synthetic respondents: respondents/s as printed;
   * the real path: ``--devices`` devices, each with its own encrypted state file,
     doing ``SurveyClient.fetch`` + ``answer`` one after another (TOFU pin, ledger
     charge with fsync, one batch POST, outbox cleared with fsync): respondents/s.

Usage::

    python benchmarks/client.py [--respondents 20000] [--devices 200] [--repeat 2000]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from deniable.aggregator.demo import demo_survey, free_port, start_server, stop_server  # noqa: E402
from deniable.aggregator.storage import open_storage  # noqa: E402
from deniable.client import StateStore, SurveyClient  # noqa: E402
from deniable.client.session import randomize_answers  # noqa: E402
from deniable.mechanisms import CATEGORICAL, NUMERIC  # noqa: E402
from deniable.survey import Survey  # noqa: E402

LONGITUDINAL = {
    "format": "deniable.survey/1",
    "id": "bench-weekly",
    "title": "Weekly",
    "questions": [
        {"id": "ok", "type": "single_choice", "text": "?", "epsilon": 1.0, "mechanism": "grr",
         "options": ["a", "b", "c", "d"],
         "longitudinal": {"key": "bench", "instantaneous_epsilon": 1.0}},
    ],
}  # fmt: skip


def timed(function, repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        function()
        samples.append((time.perf_counter_ns() - start) / 1000)
    samples.sort()
    return statistics.median(samples), samples[int(0.99 * (len(samples) - 1))]


def latency(repeat: int) -> None:
    print(f"single answer, randomize + encode with the OS CSPRNG, no network ({repeat} runs)")
    print(f"  {'mechanism':<34} {'median µs':>10} {'p99 µs':>10}")
    for name, cls in sorted(CATEGORICAL.items()):
        size = min(16, cls.max_domain_size)
        oracle = cls(epsilon=1.0, domain_size=size)
        median, p99 = timed(lambda o=oracle, v=size - 1: o.encode(o.randomize(v)), repeat)
        print(f"  {name + f' (d = {size})':<34} {median:>10.1f} {p99:>10.1f}")
    for name, cls in sorted(NUMERIC.items()):
        oracle = cls(epsilon=1.0, lo=0.0, hi=100.0)
        median, p99 = timed(lambda o=oracle: o.encode(o.randomize(42.5)), repeat)
        print(f"  {name + ' [0, 100]':<34} {median:>10.1f} {p99:>10.1f}")
    secret = os.urandom(32)
    weekly = Survey.from_dict(LONGITUDINAL)
    median, p99 = timed(lambda: randomize_answers(weekly, {"ok": 2}, secret, {}), repeat)
    print(f"  {'longitudinal grr d=4 (memo + inst.)':<34} {median:>10.1f} {p99:>10.1f}")
    demo = demo_survey()
    answers = {"burnout": True, "commute": "Bicycle", "tools": ["Chat"], "overtime": 3}
    checked = {q.id: q.check_answer(answers[q.id]) for q in demo.questions}
    median, p99 = timed(lambda: randomize_answers(demo, checked, secret, {}), repeat)
    print(f"  {'demo survey (4 questions)':<34} {median:>10.1f} {p99:>10.1f}")


def end_to_end(respondents: int, devices: int) -> None:
    with tempfile.TemporaryDirectory(prefix="deniable-bench-") as scratch:
        directory = Path(scratch)
        config = {
            "DATABASE": str(directory / "bench.sqlite3"),
            "SIGNING_KEY_PATH": str(directory / "key.pem"),
        }
        port = free_port()
        server = start_server(config, port, workers=2)
        try:
            storage = open_storage(config)
            try:
                survey = demo_survey()
                storage.create_survey(survey, results_public=True)
                real = Survey.from_dict({**survey.to_dict(), "id": "demo-real"})
                storage.create_survey(real, results_public=True)
            finally:
                storage.close()
            url = f"http://127.0.0.1:{port}"
            command = [sys.executable, "-m", "deniable.client.cli", "simulate", url, survey.id,
                       "--respondents", str(respondents), "--seed", "1", "--quiet"]  # fmt: skip
            result = subprocess.run(command, capture_output=True, text=True, check=True,
                                    env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
            rate = re.search(r"([\d,]+) respondents/s", result.stdout)
            print(f"\nend to end against a local aggregator (gunicorn, 2 workers, SQLite) at {url}")
            print(f"  deniable simulate ({respondents} respondents x 4 questions, SIMULATION): "
                  f"{rate.group(1) if rate else '?'} respondents/s")  # fmt: skip
            answers = {"burnout": True, "commute": "Bicycle", "tools": ["Chat"], "overtime": 3}
            start = time.perf_counter()
            for index in range(devices):
                store = StateStore(directory / f"device{index}" / "state.bin", key=os.urandom(32))
                with SurveyClient(url, state=store) as client:
                    receipt = client.answer("demo-real", answers)
                    assert receipt.delivered
            seconds = time.perf_counter() - start
            print(f"  real SurveyClient.fetch + answer ({devices} devices, one after another): "
                  f"{devices / seconds:,.0f} respondents/s ({1000 * seconds / devices:.1f} ms "
                  "each)")  # fmt: skip
        finally:
            stop_server(server)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--respondents", type=int, default=20_000)
    parser.add_argument("--devices", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    latency(args.repeat)
    end_to_end(args.respondents, args.devices)


if __name__ == "__main__":
    main()
