"""Sealing cost per report on the device (HPKE, RFC 9180; deniable.sealing and sealing.js).

Prints, per question (yes/no, a 5-option and a 1,024-option single choice, a numeric):

1. Python (``deniable.sealing.seal``, cryptography's HPKE): microseconds per sealed
   report, one at a time, beside the bare ``Question.randomize`` (no sealing) in the same
   run; the aggregator's ``open_sealed`` per report; a whole 4-question submission.
2. Node (``benchmarks/sealing.mjs``, the browser module client/browser/sealing.js over
   Node's WebCrypto): one seal at a time (latency), and randomize + encode + seal with
   32 reports in flight (throughput; WebCrypto works on worker threads), beside bare
   randomize + encode.
3. Headless Chromium (/usr/bin/chromium through Playwright), the same module and script
   over a loopback HTTP server: the same figures in a real browser, then randomize + encode
   + seal in the page and in navigator.hardwareConcurrency module workers, with the CPU
   time of all the browser's processes around each.
4. The accounting beside those rates: each of a seal's 8 WebCrypto calls alone and two
   trivial calls (the per-call overhead) at 32/64/256 in flight, in CPU microseconds and
   the thread that spent them; V8's sampling profile of the page's main thread while it
   seals; the ceiling their sum implies on this machine's cores; the KEM's X25519 part
   three RFC 9180 exact ways; OpenSSL's X25519 on the same core.

Target: the browser module seals and randomizes >= 10,000 reports/s. Chromium computes
WebCrypto on the calling thread, so a page reaches one core's worth; the target is met in
workers, one per core (the line marked ok or BELOW TARGET).

Usage::

    python benchmarks/sealing.py [--seconds 1] [--no-browser]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import NamedTuple

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from deniable import sealing
from deniable.survey import Survey

ROOT = Path(__file__).resolve().parents[1]
TARGET = 10_000
DEFINITION = {
    "format": "deniable.survey/2",
    "id": "bench",
    "title": "Sealing benchmark",
    "questions": [
        {"id": "yes", "type": "yes_no", "text": "?", "epsilon": 1.0},
        {
            "id": "five",
            "type": "single_choice",
            "text": "?",
            "epsilon": 1.0,
            "options": [f"o{i}" for i in range(5)],
        },
        {
            "id": "wide",
            "type": "single_choice",
            "text": "?",
            "epsilon": 1.0,
            "mechanism": "olh",
            "options": [f"o{i}" for i in range(1024)],
        },
        {"id": "hours", "type": "numeric", "text": "?", "epsilon": 1.0, "lo": 0, "hi": 40},
    ],
}
ANSWERS = {"yes": True, "five": "o3", "wide": "o700", "hours": 12.5}


def per_second(seconds: float, step) -> tuple[float, float]:
    """(wall, CPU) microseconds per call of ``step`` over about ``seconds``.

    The CPU time (this process) is the figure a loaded, shared machine does not distort.
    """
    for _ in range(200):
        step()
    count, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        for _ in range(100):
            step()
        count += 100
    return ((time.perf_counter() - start) / count * 1e6, (time.process_time() - cpu) / count * 1e6)


def python_figures(survey: Survey, seconds: float) -> None:
    private = sealing.generate_private_key()
    public = sealing.public_bytes(private)
    print(
        "Python (deniable.sealing, cryptography HPKE), one report at a time, microseconds "
        "per report, wall (CPU):"
    )
    print(
        f"  {'question':<10} {'bytes':>6} {'randomize':>17} {'+ seal':>17} {'seal only':>17} "
        f"{'open':>17}"
    )
    for question in survey.questions:
        size = sealing.unit_size(survey, question.id)
        answer = ANSWERS[question.id]

        def report(question=question, answer=answer) -> dict[str, str]:
            return {
                "id": "0f8fad5b-d9cb-469f-a165-70867728950e",
                "question": question.id,
                "payload": question.randomize(answer),
            }

        def seal(question=question, size=size, report=report) -> bytes:
            return sealing.seal(
                public,
                survey_id=survey.id,
                unit=question.id,
                plaintext=sealing.unit_body([report()], question.id),
                size=size,
            )

        blob = seal()
        bare = per_second(seconds, report)
        sealed = per_second(seconds, seal)
        opened = per_second(
            seconds,
            partial(
                sealing.open_sealed,
                private,
                survey_id=survey.id,
                unit=question.id,
                sealed=blob,
                size=size,
            ),
        )
        only = (sealed[0] - bare[0], sealed[1] - bare[1])
        cells = " ".join(f"{w:>8.1f} ({c:>6.1f})" for w, c in (bare, sealed, only, opened))
        print(f"  {question.id:<10} {len(blob):>6} {cells}")
    size = sealing.unit_size(survey, "")
    reports = [
        {
            "id": "0f8fad5b-d9cb-469f-a165-70867728950e",
            "question": q.id,
            "payload": q.randomize(ANSWERS[q.id]),
        }
        for q in survey.questions
    ]
    whole = per_second(
        seconds,
        lambda: sealing.seal(
            public,
            survey_id=survey.id,
            unit="",
            plaintext=sealing.unit_body(reports, ""),
            size=size,
        ),
    )
    print(
        f"  whole submission ({len(survey.questions)} questions, "
        f"{sealing.sealed_length(size)} bytes): {whole[0]:.1f} ({whole[1]:.1f} CPU) "
        "microseconds to seal"
    )


def node_questions(survey: Survey) -> list[list]:
    return [[q.id, q.to_dict(survey.format), ANSWERS[q.id]] for q in survey.questions]


def print_js(where: str, lines: list[dict]) -> None:
    print(f"\n{where} (client/browser/sealing.js over WebCrypto):")
    cpu = "cpuMicroseconds" in lines[0]["concurrent"]
    # The target is the browser's, met in workers (below); these rows are one thread's.
    print(
        f"  {'question':<10} {'bytes':>6} {'bare/s':>11} {'sealed/s':>10} {'us/seal':>8} "
        f"{'in flight':>9}{'  CPU us/seal  per core/s' if cpu else ''}"
    )
    for line in lines:
        rate = line["concurrent"]["perSecond"]
        extra = ""
        if cpu:
            cpu_us = line["concurrent"]["cpuMicroseconds"]
            extra = f"  {cpu_us:>11.1f} {1e6 / cpu_us:>11,.0f}"
        print(
            f"  {line['label']:<10} {line['bytes']:>6} {line['bare']['perSecond']:>11,.0f} "
            f"{rate:>10,.0f} {line['sequential']['microseconds']:>8.1f} "
            f"{line['inFlight']:>9}{extra}"
        )
    print(
        "  one thread (Node's main thread; the page's in Chromium); bare/s: randomize + "
        "encode, no sealing; sealed/s: randomize + encode + seal with "
        "that many reports in flight (wall clock); us/seal: one at a time"
        + (
            "; CPU us/seal: process CPU time (worker threads included) per sealed report in "
            "flight, and the reports/s one whole core gives at that cost"
            if cpu
            else ""
        )
    )


def node_figures(survey: Survey, public: bytes, seconds: float) -> None:
    node = shutil.which("node")
    if node is None:
        print("\nNode: not installed; skipped")
        return
    data = json.dumps({"questions": node_questions(survey), "public_key": public.hex()})
    result = subprocess.run(
        [node, str(ROOT / "benchmarks" / "sealing.mjs"), str(seconds)],
        input=data,
        capture_output=True,
        text=True,
        check=True,
    )
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    print_js(f"Node {version}", lines[:-1])
    floor = lines[-1]["x25519"]
    print(
        f"  X25519 alone (fresh pair + export + one DH, 32 in flight, no KDF/AEAD): "
        f"{floor['perSecond']:,.0f}/s, {floor['cpuMicroseconds']:.1f} CPU us each "
        f"({1e6 / floor['cpuMicroseconds']:,.0f}/s per whole core)"
    )
    print("  The KEM's X25519 part (enc and the DH) three ways (as in Chromium), 32 in flight:")
    for what, figures in lines[-1]["kems"]:
        print(f"    {what:<74} {figures['cpuMicroseconds']:6.1f} CPU us")


def browser_cpu(root: int) -> tuple[float, dict[tuple[int, str], float]]:
    """CPU seconds (user + system) of every live descendant of process ``root``, and per thread.

    Linux /proc: a process's own figure includes its exited threads (a terminated worker's);
    the per-thread one ({(process id, thread name): seconds}, the threads of one name in one
    process summed: a page's workers) names where the time went.
    """
    children: dict[int, list[tuple[int, float]]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    cpu = lambda stat: (int(stat[11]) + int(stat[12])) / tick  # noqa: E731 (utime + stime)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append((int(entry.name), cpu(fields)))
    total, threads, stack = 0.0, {}, [root]
    while stack:
        for pid, seconds in children.get(stack.pop(), []):
            total += seconds
            stack.append(pid)
            for task in Path(f"/proc/{pid}/task").glob("*"):
                try:
                    text = (task / "stat").read_text()
                except OSError:
                    continue
                name = text[text.index("(") + 1 : text.rindex(")")]
                seconds = cpu(text.rsplit(")", 1)[1].split())
                threads[(pid, name)] = threads.get((pid, name), 0.0) + seconds
    return total, threads


MODULE = "/benchmarks/sealing.mjs"


class Measured(NamedTuple):
    figures: dict
    cpu: float  # CPU microseconds per item, the browser's processes together
    busiest: tuple[str, float]  # the threads (one name) using most CPU, their share of it


def measure(page, call: str, *arguments: object) -> Measured:
    """``call`` of benchmarks/sealing.mjs in the page, with the browser's CPU time around it."""
    total, threads = browser_cpu(os.getpid())
    script = f"async (a) => (await import('{MODULE}')).{call}(...a)"
    figures = page.evaluate(script, list(arguments))
    after, threads_after = browser_cpu(os.getpid())
    per = 1e6 / figures["count"]
    used = {key: seconds - threads.get(key, 0.0) for key, seconds in threads_after.items()}
    (_, name), seconds = max(used.items(), key=lambda item: item[1])
    share = seconds / max(sum(used.values()), 1e-9)  # both in the threads' own clock ticks
    return Measured(figures, (after - total) * per, (name, share))


ROUNDS = 3
WEBCRYPTO = {"generateKey", "exportKey", "importKey", "deriveBits", "deriveKey", "encrypt"}


def profiled(page, *arguments: object) -> dict[str, float]:
    """Microseconds per sealed report on the page's main thread, by kind, from V8's sampling
    profiler (Chrome DevTools Protocol) around sealLoop: WebCrypto's native calls, JavaScript,
    garbage collection, the rest (native code outside JavaScript, idle)."""
    session = page.context.new_cdp_session(page)
    session.send("Profiler.enable")
    session.send("Profiler.setSamplingInterval", {"interval": 100})
    session.send("Profiler.start")
    figures = page.evaluate(
        f"async (a) => (await import('{MODULE}')).sealLoop(...a)", list(arguments)
    )
    profile = session.send("Profiler.stop")["profile"]
    session.detach()
    frames = {node["id"]: node["callFrame"] for node in profile["nodes"]}
    kinds: dict[str, float] = {}
    for sample in profile["samples"]:
        frame = frames[sample]
        name = frame["functionName"]
        kind = (
            "WebCrypto"
            if name in WEBCRYPTO and not frame["url"]
            else "garbage collection"
            if name == "(garbage collector)"
            else "other"
            if name.startswith("(")
            else "JavaScript"
        )
        kinds[kind] = kinds.get(kind, 0) + 1
    per = (profile["endTime"] - profile["startTime"]) / len(profile["samples"]) / figures["count"]
    return {kind: count * per for kind, count in kinds.items()}


TRIVIAL_IN_FLIGHT = (32, 64, 256)  # the trivial calls' overhead at each; a seal's calls at 32


def browser_figures(survey: Survey, public: bytes, seconds: float) -> None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("\nChromium: playwright is not installed; skipped")
        return

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(ROOT)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    first, key, short = node_questions(survey)[0], public.hex(), min(seconds, 0.5)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/benchmarks/")
            lines = page.evaluate(
                "async ([questions, key, seconds]) => (await import('/benchmarks/sealing.mjs'))"
                ".run(questions, key, seconds)",
                [node_questions(survey), key, seconds],
            )
            # CPU time of the whole browser (all its processes and threads) around a loop that
            # only seals, in the page and in workers, and around each WebCrypto call of a seal
            # alone: the figures a loaded machine does not distort.
            seal = min(
                (measure(page, "sealLoop", first, key, seconds) for _ in range(ROUNDS)),
                key=lambda m: m.cpu,
            )
            profile = profiled(page, first, key, seconds)
            cores = page.evaluate("navigator.hardwareConcurrency")
            page.evaluate(
                f"async (a) => (await import('{MODULE}')).startWorkers(...a)", [first, key, cores]
            )
            workers = measure(page, "runWorkers", first, key, seconds)
            page.evaluate(f"async () => (await import('{MODULE}')).stopWorkers()")
            floor = measure(page, "x25519", seconds, 32, 0)  # run() warmed it up
            names = page.evaluate(
                f"async () => {{ const m = await import('{MODULE}'); return "
                "[m.CALLS, m.KEMS].map((l) => l.map(([n, w]) => [n, w])); }"
            )
            # Each call alone, in rounds, the least CPU of each kept: a shared machine only adds.
            calls: dict = {}
            each = [
                (call, n)
                for call, _ in names[0] + names[1]
                for n in TRIVIAL_IN_FLIGHT[: 3 if call in ("digest", "hmac") else 1]
            ]
            for _ in range(ROUNDS):
                for call, n in each:
                    page.evaluate(
                        f"async (a) => (await import('{MODULE}')).call(...a)",
                        [call, key, 0.1, n, 0],
                    )  # warm up, not measured
                    figures = measure(page, "call", call, key, short, n, 0)
                    if (call, n) not in calls or figures.cpu < calls[(call, n)].cpu:
                        calls[(call, n)] = figures
            kems = {name: calls.pop((name, 32)) for name, _ in names[1]}
            version = browser.version
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    print_js(f"Chromium {version} (headless)", lines)
    name = survey.questions[0].id
    print(
        f"  {name} alone, 32 in flight: {seal.figures['perSecond']:,.0f}/s, {seal.cpu:.1f} CPU "
        f"us per sealed report, browser's processes together ({1e6 / seal.cpu:,.0f}/s per whole "
        "core)"
    )
    print(
        f"  {name} alone in {workers.figures['workers']} module workers (navigator."
        f"hardwareConcurrency), 32 in flight each: {workers.figures['perSecond']:,.0f}/s "
        f"together, {workers.cpu:.1f} CPU us per sealed report  target >= {TARGET:,}/s "
        f"{'ok' if workers.figures['perSecond'] >= TARGET else 'BELOW TARGET'}"
    )
    print(
        f"  X25519 alone (fresh pair + export + one DH, 32 in flight, no KDF/AEAD): "
        f"{floor.figures['perSecond']:,.0f}/s, {floor.cpu:.1f} CPU us each "
        f"({1e6 / floor.cpu:,.0f}/s per whole core)"
    )
    accounting(lines[0], names, calls, kems, seal, workers, cores, profile)


def accounting(
    line: dict,
    names: list,
    calls: dict,
    kems: dict,
    seal: Measured,
    workers: Measured,
    cores: int,
    profile: dict[str, float],
) -> None:
    """Where a seal's CPU time goes in Chromium, and the rate it allows on this machine's cores."""
    print(
        f"\n  Where a seal's time goes in Chromium: each WebCrypto call of sealing.js's seal "
        f"alone, CPU us per call, browser's processes together, least of {ROUNDS} rounds [the "
        "busiest thread, its share]:"
    )
    seal_sum = x25519 = 0.0
    for name, what in names[0]:
        cells = sorted((n, m) for (call, n), m in calls.items() if call == name)
        figures = ", ".join(f"{m.cpu:.1f} at {n} in flight" for n, m in cells)
        busiest = cells[0][1].busiest
        print(f"    {what:<58} {figures}  [{busiest[0]} {busiest[1]:.0%}]")
        if "trivial" not in what:
            seal_sum += cells[0][1].cpu
            x25519 += cells[0][1].cpu if name in ("generateKey", "dh") else 0.0
    count = sum("trivial" not in what for _, what in names[0])
    trivial = calls[("digest", 32)].cpu
    bare = 1e6 / line["bare"]["perSecond"]  # one thread, wall: randomize + encode
    print(
        f"    a seal's {count} calls summed: {seal_sum:.1f} = X25519's two (generateKey, "
        f"deriveBits) {x25519:.1f} ({x25519 / seal_sum:.0%}) + the other {count - 2} "
        f"{seal_sum - x25519:.1f}; of the sum, per-call overhead (a trivial call's cost x "
        f"{count}) is {count * trivial:.1f} ({count * trivial / seal_sum:.0%})"
    )
    print(
        f"    a whole seal measured (randomize {bare:.1f} + encode + seal, 32 in flight): "
        f"{seal.cpu:.1f} CPU us, {seal.busiest[1]:.0%} of it on the page's {seal.busiest[0]} "
        f"thread; in workers {workers.cpu:.1f}, {workers.busiest[1]:.0%} on the "
        f"{workers.busiest[0]} threads"
    )
    whole = sum(profile.values())
    kinds = ", ".join(
        f"{kind} {profile.get(kind, 0.0) / whole:.0%}"
        for kind in ("WebCrypto", "JavaScript", "garbage collection", "other")
    )
    print(
        f"    the page's main thread in V8's sampling profiler during that loop: {kinds} "
        "(WebCrypto: its native calls; other: native code outside them, idle)"
    )
    print(
        "    WebCrypto computes each call on the calling thread (no crypto thread pool): the "
        "page's sealing tops out at one core, workers' at one core each"
    )
    floor = seal_sum + bare
    print(
        f"    ceiling on {cores} cores with nothing else running: {cores * 1e6 / floor:,.0f}/s "
        f"from the calls' sum + randomize ({floor:.1f} CPU us), {cores * 1e6 / seal.cpu:,.0f}/s "
        f"from the whole seal measured; one thread (the page): {1e6 / floor:,.0f}/s, "
        f"{1e6 / seal.cpu:,.0f}/s"
    )
    print(
        f"    measured beside it: the page {seal.figures['perSecond']:,.0f}/s, {cores} workers "
        f"{workers.figures['perSecond']:,.0f}/s"
    )
    print("  The KEM's X25519 part (enc and the DH) three ways, each RFC 9180 exact, 32 in flight:")
    for name, what in names[1]:
        print(f"    {what:<74} {kems[name].cpu:6.1f} CPU us")
    # The same primitive on the same core outside the browser, beside BoringSSL's costs above.
    peer = X25519PrivateKey.generate().public_key()
    pair = per_second(0.3, lambda: X25519PrivateKey.generate().public_key().public_bytes_raw())[1]
    exchange = per_second(0.3, partial(X25519PrivateKey.generate().exchange, peer))[1]
    print(
        f"  X25519 in OpenSSL (cryptography), one at a time: a fresh pair and its public bytes "
        f"{pair:.1f} CPU us, one DH {exchange:.1f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="per measurement")
    parser.add_argument("--no-browser", action="store_true", help="skip headless Chromium")
    args = parser.parse_args(argv)
    survey = Survey.from_dict(DEFINITION)
    public = sealing.public_bytes(sealing.generate_private_key())
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"machine: {os.cpu_count()} cores, load average {load} (1/5/15 min): figures scale "
        "with the share of a core this run gets\n"
    )
    python_figures(survey, args.seconds)
    node_figures(survey, public, args.seconds)
    if not args.no_browser:
        browser_figures(survey, public, args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
