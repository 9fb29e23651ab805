"""Client benchmark: single reports side by side with baselines, latency, end to end.

0. Side by side in the same run (``--n`` reports each, ε = 1, best of ``--runs``
   interleaved runs), one report at a time through the public API
   (``randomize`` + ``encode`` on the OS CSPRNG):
   * GRR d = 16 against a bare loop drawing the same values (a 53-bit uniform
     and a uniform below d - 1) from ``secrets.SystemRandom()``: the practical
     limit for a CSPRNG;
   * GRR d = 16, OLH and OUE at d = 1,024 against pure-ldp's ``privatise``
     (Python's non-cryptographic ``random`` and numpy) and multi-freq-ldpy's
     clients, when those peers can be imported (``--peers SITE_PACKAGES`` adds
     a scratch venv's site-packages; pure-ldp 1.2.0 needs xxhash < 2);
   * ``import deniable.client`` in a fresh interpreter (best of 7, CPU time):
     milliseconds with bytecode cached (as after ``pip install``; a scratch
     ``PYTHONPYCACHEPREFIX``), whether numpy was loaded, and ``import numpy``
     measured the same way; under ``PYTHONDONTWRITEBYTECODE`` also as run, with
     the project's modules compiled from source on every import.
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

    python benchmarks/client.py [--n 20000] [--runs 5] [--peers DIR]
                                [--respondents 20000] [--devices 200] [--repeat 2000]
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
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
from deniable.client.randomized import randomize_answers  # noqa: E402
from deniable.mechanisms import CATEGORICAL, GRR, NUMERIC, OLH, OUE  # noqa: E402
from deniable.survey import Survey  # noqa: E402

LONGITUDINAL = {
    "format": "deniable.survey/1",
    "id": "bench-weekly",
    "title": "Weekly",
    "questions": [
        {
            "id": "ok",
            "type": "single_choice",
            "text": "?",
            "epsilon": 1.0,
            "mechanism": "grr",
            "options": ["a", "b", "c", "d"],
            "longitudinal": {"key": "bench", "instantaneous_epsilon": 1.0},
        },
    ],
}


def rates(functions: dict[str, object], n: int, runs: int) -> dict[str, float]:
    """Calls per CPU second of each function, best of ``runs`` runs taken in turn.

    CPU time of this process (user + system, so the CSPRNG's kernel time
    counts): on a shared machine, wall time mostly measures the neighbours.
    """
    best = dict.fromkeys(functions, float("inf"))
    for _ in range(runs):
        for name, function in functions.items():
            start = time.process_time()
            for _ in range(n):
                function()
            best[name] = min(best[name], time.process_time() - start)
    return {name: n / seconds for name, seconds in best.items()}


def load_peers(path: str | None) -> tuple[object, object, str]:
    """pure-ldp and multi-freq-ldpy if importable (never project dependencies)."""
    if path:
        sys.path.append(path)
    notes, pure, multi = [], None, None
    try:
        from pure_ldp.frequency_oracles import DEClient, LHClient, UEClient

        pure = (DEClient, LHClient, UEClient)
    except Exception as error:  # noqa: BLE001 - any failure just means "absent"
        notes.append(f"pure-ldp absent ({type(error).__name__}: {error})")
    try:
        from multi_freq_ldpy.pure_frequency_oracles import GRR as mGRR
        from multi_freq_ldpy.pure_frequency_oracles import LH as mLH
        from multi_freq_ldpy.pure_frequency_oracles import UE as mUE

        multi = (mGRR, mLH, mUE)
    except Exception as error:  # noqa: BLE001
        notes.append(f"multi-freq-ldpy absent ({type(error).__name__}: {error})")
    return pure, multi, "; ".join(notes)


def import_ms(module: str, runs: int = 7, *, cache: str | None = None) -> tuple[float, bool]:
    """Best CPU time of ``import module`` in a fresh interpreter, and whether numpy got loaded.

    ``cache``: a scratch bytecode directory (``PYTHONPYCACHEPREFIX``) filled by one
    import first, so every module loads from bytecode as after ``pip install``;
    ``None``: the interpreter's own setting, which with ``PYTHONDONTWRITEBYTECODE``
    compiles every source module of the project on every import.
    """
    script = (
        "import sys, time\n"
        f"start = time.process_time(); import {module}; elapsed = time.process_time() - start\n"
        "print(elapsed * 1000, 'numpy' in sys.modules)"
    )
    env = dict(os.environ)
    if cache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache
        subprocess.run([sys.executable, "-c", f"import {module}"], env=env, check=True)
    best, numpy_loaded = float("inf"), False
    for _ in range(runs):
        output = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
        ).stdout.split()
        best = min(best, float(output[0]))
        numpy_loaded = output[1] == "True"
    return best, numpy_loaded


def import_times() -> None:
    """``import deniable.client`` and ``import numpy``, from bytecode (as installed) and as run."""
    with tempfile.TemporaryDirectory(prefix="deniable-pycache-") as cache:
        client_ms, client_numpy = import_ms("deniable.client", cache=cache)
        numpy_ms, _ = import_ms("numpy", cache=cache)
    print(
        f"  import deniable.client: {client_ms:.0f} ms CPU (best of 7, fresh interpreter, "
        f"bytecode cached as after pip install), numpy loaded: "
        f"{'yes' if client_numpy else 'no'}; import numpy alone: {numpy_ms:.0f} ms "
        f"(ratio {client_ms / numpy_ms:.2f})"
    )
    if sys.flags.dont_write_bytecode:
        source_ms, _ = import_ms("deniable.client")
        print(
            f"  import deniable.client as run here (PYTHONDONTWRITEBYTECODE: every module "
            f"of the project compiled from source): {source_ms:.0f} ms"
        )
    print()


def side_by_side(n: int, runs: int, peers_path: str | None) -> None:
    pure, multi, note = load_peers(peers_path)
    print(
        f"single reports, one at a time, n = {n:,} per run, best of {runs} interleaved runs, "
        "ε = 1 (reports per CPU second; ratio = Deniable / baseline, > 1: Deniable faster)"
    )

    print(f"  {'work':<40} {'Deniable/s':>11} {'baseline/s':>11} {'ratio':>7}  baseline")
    system = secrets.SystemRandom()
    grr = GRR(epsilon=1.0, domain_size=16)
    keep, others = grr._keep, grr.domain_size - 1

    def bare(value: int = 5) -> int:
        kept = system.getrandbits(53) < keep
        other = system.randrange(others)
        other += other >= value
        return value if kept else other

    rows: list[tuple[str, object, str, object]] = [
        (
            "GRR d=16 randomize+encode, CSPRNG",
            lambda: grr.encode(grr.randomize(5)),
            "bare secrets.SystemRandom() loop, same draws",
            bare,
        ),
    ]
    olh = OLH(epsilon=1.0, domain_size=1024)
    oue = OUE(epsilon=1.0, domain_size=1024)
    ours = {
        "GRR d=16": lambda: grr.encode(grr.randomize(5)),
        "OLH d=1024": lambda: olh.encode(olh.randomize(5)),
        "OUE d=1024": lambda: oue.encode(oue.randomize(5)),
    }
    if pure is not None:
        de_client, lh_client, ue_client = pure
        peer = {
            "GRR d=16": de_client(epsilon=1.0, d=16).privatise,
            "OLH d=1024": lh_client(epsilon=1.0, d=1024, use_olh=True).privatise,
            "OUE d=1024": ue_client(epsilon=1.0, d=1024, use_oue=True).privatise,
        }
        for label, function in ours.items():
            rows.append(
                (
                    f"{label} randomize+encode",
                    function,
                    "pure-ldp 1.2.0 privatise",
                    lambda f=peer[label]: f(6),
                )
            )
    if multi is not None:
        m_grr, m_lh, m_ue = multi
        peer = {
            "GRR d=16": lambda: m_grr.GRR_Client(5, 16, 1.0),
            "OLH d=1024": lambda: m_lh.LH_Client(5, 1024, 1.0),
            "OUE d=1024": lambda: m_ue.UE_Client(5, 1024, 1.0),
        }
        for label, function in ours.items():
            peer[label]()  # numba compiles on the first call
            rows.append(
                (f"{label} randomize+encode", function, "multi-freq-ldpy 0.2.5 client", peer[label])
            )
    for label, function, baseline, peer_function in rows:
        size = n if "OUE" not in label else max(1, n // 4)
        result = rates({"ours": function, "peer": peer_function}, size, runs)
        print(
            f"  {label:<40} {result['ours']:>11,.0f} {result['peer']:>11,.0f} "
            f"{result['ours'] / result['peer']:>7.2f}  {baseline}"
        )
    parts = rates({"randomize": lambda: grr.randomize(5), "encode": lambda: grr.encode(5)}, n, runs)
    print(
        f"  {'GRR d=16 randomize alone / encode alone':<40} {parts['randomize']:>11,.0f} "
        f"{parts['encode']:>11,.0f}"
    )
    if note:
        print(f"  note: {note}; pass --peers <venv site-packages> to compare")
    import_times()


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
            command = [
                sys.executable,
                "-m",
                "deniable.client.cli",
                "simulate",
                url,
                survey.id,
                "--respondents",
                str(respondents),
                "--seed",
                "1",
                "--quiet",
            ]
            result = subprocess.run(
                command,
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            rate = re.search(r"([\d,]+) respondents/s", result.stdout)
            print(f"\nend to end against a local aggregator (gunicorn, 2 workers, SQLite) at {url}")
            print(
                f"  deniable simulate ({respondents} respondents x 4 questions, SIMULATION): "
                f"{rate.group(1) if rate else '?'} respondents/s"
            )
            answers = {"burnout": True, "commute": "Bicycle", "tools": ["Chat"], "overtime": 3}
            start = time.perf_counter()
            for index in range(devices):
                store = StateStore(directory / f"device{index}" / "state.bin", key=os.urandom(32))
                with SurveyClient(url, state=store) as client:
                    receipt = client.answer("demo-real", answers)
                    assert receipt.delivered
            seconds = time.perf_counter() - start
            print(
                f"  real SurveyClient.fetch + answer ({devices} devices, one after another): "
                f"{devices / seconds:,.0f} respondents/s ({1000 * seconds / devices:.1f} ms "
                "each)"
            )
        finally:
            stop_server(server)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="reports per side-by-side run")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--peers", help="site-packages of a scratch venv with the peer libraries")
    parser.add_argument("--side-by-side-only", action="store_true")
    parser.add_argument("--respondents", type=int, default=20_000)
    parser.add_argument("--devices", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    side_by_side(args.n, args.runs, args.peers)
    if args.side_by_side_only:
        return
    latency(args.repeat)
    end_to_end(args.respondents, args.devices)


if __name__ == "__main__":
    main()
