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
   over a loopback HTTP server: the same figures in a real browser.

Target: the browser module seals and randomizes >= 10,000 reports/s.

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
        {"id": "five", "type": "single_choice", "text": "?", "epsilon": 1.0,
         "options": [f"o{i}" for i in range(5)]},
        {"id": "wide", "type": "single_choice", "text": "?", "epsilon": 1.0, "mechanism": "olh",
         "options": [f"o{i}" for i in range(1024)]},
        {"id": "hours", "type": "numeric", "text": "?", "epsilon": 1.0, "lo": 0, "hi": 40},
    ],
}  # fmt: skip
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
    return ((time.perf_counter() - start) / count * 1e6,
            (time.process_time() - cpu) / count * 1e6)  # fmt: skip


def python_figures(survey: Survey, seconds: float) -> None:
    private = sealing.generate_private_key()
    public = sealing.public_bytes(private)
    print("Python (deniable.sealing, cryptography HPKE), one report at a time, microseconds "
          "per report, wall (CPU):")
    print(f"  {'question':<10} {'bytes':>6} {'randomize':>17} {'+ seal':>17} {'seal only':>17} "
          f"{'open':>17}")  # fmt: skip
    for question in survey.questions:
        size = sealing.unit_size(survey, question.id)
        answer = ANSWERS[question.id]

        def report(question=question, answer=answer) -> dict[str, str]:
            return {"id": "0f8fad5b-d9cb-469f-a165-70867728950e", "question": question.id,
                    "payload": question.randomize(answer)}  # fmt: skip

        def seal(question=question, size=size, report=report) -> bytes:
            return sealing.seal(public, survey_id=survey.id, unit=question.id,
                                plaintext=sealing.unit_body([report()], question.id), size=size)

        blob = seal()
        bare = per_second(seconds, report)
        sealed = per_second(seconds, seal)
        opened = per_second(seconds, partial(sealing.open_sealed, private, survey_id=survey.id,
                                             unit=question.id, sealed=blob, size=size))
        only = (sealed[0] - bare[0], sealed[1] - bare[1])
        cells = " ".join(f"{w:>8.1f} ({c:>6.1f})" for w, c in (bare, sealed, only, opened))
        print(f"  {question.id:<10} {len(blob):>6} {cells}")
    size = sealing.unit_size(survey, "")
    reports = [{"id": "0f8fad5b-d9cb-469f-a165-70867728950e", "question": q.id,
                "payload": q.randomize(ANSWERS[q.id])} for q in survey.questions]  # fmt: skip
    whole = per_second(seconds, lambda: sealing.seal(
        public, survey_id=survey.id, unit="", plaintext=sealing.unit_body(reports, ""), size=size))
    print(f"  whole submission ({len(survey.questions)} questions, "
          f"{sealing.sealed_length(size)} bytes): {whole[0]:.1f} ({whole[1]:.1f} CPU) "
          "microseconds to seal")


def node_questions(survey: Survey) -> list[list]:
    return [[q.id, q.to_dict(survey.format), ANSWERS[q.id]] for q in survey.questions]


def print_js(where: str, lines: list[dict]) -> None:
    print(f"\n{where} (client/browser/sealing.js over WebCrypto):")
    cpu = "cpuMicroseconds" in lines[0]["concurrent"]
    print(f"  {'question':<10} {'bytes':>6} {'bare/s':>11} {'sealed/s':>10} {'us/seal':>8} "
          f"{'in flight':>9}{'  CPU us/seal  per core/s' if cpu else ''}  "
          f"target >= {TARGET:,}/s")  # fmt: skip
    for line in lines:
        rate = line["concurrent"]["perSecond"]
        verdict = "ok" if rate >= TARGET else "BELOW TARGET"
        extra = ""
        if cpu:
            cpu_us = line["concurrent"]["cpuMicroseconds"]
            extra = f"  {cpu_us:>11.1f} {1e6 / cpu_us:>11,.0f}"
        print(f"  {line['label']:<10} {line['bytes']:>6} {line['bare']['perSecond']:>11,.0f} "
              f"{rate:>10,.0f} {line['sequential']['microseconds']:>8.1f} "
              f"{line['inFlight']:>9}{extra}  {verdict}")  # fmt: skip
    print("  bare/s: randomize + encode, no sealing; sealed/s: randomize + encode + seal with "
          "that many reports in flight (wall clock); us/seal: one at a time"
          + ("; CPU us/seal: process CPU time (worker threads included) per sealed report in "
             "flight, and the reports/s one whole core gives at that cost" if cpu else ""))


def node_figures(survey: Survey, public: bytes, seconds: float) -> None:
    node = shutil.which("node")
    if node is None:
        print("\nNode: not installed; skipped")
        return
    data = json.dumps({"questions": node_questions(survey), "public_key": public.hex()})
    result = subprocess.run([node, str(ROOT / "benchmarks" / "sealing.mjs"), str(seconds)],
                            input=data, capture_output=True, text=True, check=True)  # fmt: skip
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    print_js(f"Node {version}", [json.loads(line) for line in result.stdout.splitlines()])


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
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/benchmarks/")
            lines = page.evaluate(
                "async ([questions, key, seconds]) => (await import('/benchmarks/sealing.mjs'))"
                ".run(questions, key, seconds)",
                [node_questions(survey), public.hex(), seconds],
            )
            version = browser.version
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    print_js(f"Chromium {version} (headless)", lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="per measurement")
    parser.add_argument("--no-browser", action="store_true", help="skip headless Chromium")
    args = parser.parse_args(argv)
    survey = Survey.from_dict(DEFINITION)
    public = sealing.public_bytes(sealing.generate_private_key())
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} cores, load average {load} (1/5/15 min): figures scale "
          "with the share of a core this run gets\n")
    python_figures(survey, args.seconds)
    node_figures(survey, public, args.seconds)
    if not args.no_browser:
        browser_figures(survey, public, args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
