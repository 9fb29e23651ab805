"""Browser client benchmark: JS randomize+encode per report, module size, submit→ack time.

1. Node (``benchmarks/browser.mjs``): reports/s of ``randomize`` + ``encode`` with the
   CSPRNG (``crypto.getRandomValues``) for every mechanism, beside the Python client's
   ``Question.randomize`` (the same resolved questions, same run) for the ratio.
   Targets: >= 100,000 reports/s for GRR and OLH at d = 1,024.
2. Sizes, unminified and gzip. Target: the client module < 30,000 bytes unminified, that
   is ``deniable.js`` with its static imports (what ``import "@deniable/browser"`` loads).
   Printed beside it, with no target: the module with the mechanism modules the demo
   survey names (imported on demand, after the signature check), everything the demo
   survey's respond page loads (the form, respond.js, included; not keychain.js, imported
   only for a key rotation), the client with every mechanism module and keychain.js (what
   a bundler would inline), every module, and each module's size.
3. The respond page in headless Chromium (Playwright, /usr/bin/chromium) against a
   gunicorn aggregator on 127.0.0.1: time from clicking "Send" to the acknowledged
   state, median over ``--pages`` fresh browser contexts.

Usage::

    python benchmarks/browser.py [--seconds 0.5] [--pages 10]
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from deniable.aggregator.demo import demo_survey
from deniable.aggregator.respond import CORE, FORM, MODULES, static_file, survey_modules
from deniable.survey import FORMAT, Question

ROOT = Path(__file__).resolve().parents[1]
WIDE = [str(i) for i in range(1024)]
SIXTEEN = [str(i) for i in range(16)]


def q(kind: str, mechanism: str, options=None, **extra):
    data = {"id": "q", "type": kind, "text": "?", "epsilon": 1.0, "mechanism": mechanism, **extra}
    if options is not None:
        data["options"] = options
    return Question.from_dict(data, "q", FORMAT).to_dict(FORMAT)


CASES = [
    ("binary_rr", q("yes_no", "binary_rr"), True),
    ("grr d=1024", q("single_choice", "grr", WIDE), "17"),
    ("olh d=1024", q("single_choice", "olh", WIDE), "17"),
    ("grr d=16", q("single_choice", "grr", SIXTEEN), "3"),
    ("sue d=16", q("single_choice", "sue", SIXTEEN), "3"),
    ("oue d=16", q("single_choice", "oue", SIXTEEN), "3"),
    ("hrr d=1024", q("single_choice", "hrr", WIDE), "17"),
    ("subset d=16", q("single_choice", "subset", SIXTEEN), "3"),
    ("option_sampling m=8", q("multiple_choice", "option_sampling", SIXTEEN[:8]), ["1", "5"]),
    ("binary_rr split m=8", q("multiple_choice", "binary_rr", SIXTEEN[:8]), ["1", "5"]),
    ("duchi", q("numeric", "duchi", lo=0, hi=100), 42.0),
    ("discrete_laplace G=1000", q("numeric", "discrete_laplace", lo=0, hi=100), 42.0),
]


def python_rate(definition, answer, seconds: float) -> float:
    question = Question.from_dict(definition, "q", FORMAT)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(200):
            question.randomize(answer)
        count += 200
    return count / (time.perf_counter() - start)


def node_rates(seconds: float) -> dict[str, float]:
    node = shutil.which("node")
    if node is None:
        sys.exit("node (>= 20) is needed")
    payload = json.dumps([[label, d, a] for label, d, a in CASES])
    result = subprocess.run(
        [node, str(ROOT / "benchmarks" / "browser.mjs"), str(seconds)],
        input=payload,
        capture_output=True,
        text=True,
        check=True,
    )
    return {row["label"]: row["perSecond"] for row in map(json.loads, result.stdout.splitlines())}


def submit_times(pages: int) -> list[float]:
    from playwright.sync_api import sync_playwright

    from deniable.aggregator import cli, demo

    directory = Path(tempfile.mkdtemp(prefix="deniable-browser-bench-"))
    database, key = directory / "db.sqlite3", directory / "key.pem"
    options = ["--database", str(database), "--signing-key", str(key)]
    cli.main([*options, "init"])
    definition = directory / "survey.json"
    definition.write_text(json.dumps(demo.demo_survey().to_dict()))
    cli.main([*options, "create-survey", str(definition)])
    port = demo.free_port()
    server = demo.start_server({"DATABASE": database, "SIGNING_KEY_PATH": key}, port)
    times = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path="/usr/bin/chromium",
                args=[
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--no-first-run",
                ],
            )
            for _ in range(pages):
                context = browser.new_context()
                page = context.new_page()
                page.goto(f"http://127.0.0.1:{port}/surveys/demo-workplace/respond")
                page.wait_for_selector("[data-state=ready]", state="attached")
                page.get_by_label("Yes", exact=True).check()
                page.get_by_label("Bicycle", exact=True).check()
                page.get_by_label("Email", exact=True).check()
                page.fill("#q-overtime", "3.5")
                page.get_by_role("button", name="Randomize my answers").click()
                page.wait_for_selector("[data-state=review]", state="attached")
                # Send is held inactive for a moment after the review shows (a double click
                # must not send): time from the click the respondent can make.
                page.wait_for_selector(".deniable-review button.deniable-primary:enabled")
                start = time.perf_counter()
                page.get_by_role("button", name="Send these noisy values").click()
                page.wait_for_selector("[data-state=sent]", state="attached")
                times.append(time.perf_counter() - start)
                context.close()
            browser.close()
    finally:
        demo.stop_server(server)
        shutil.rmtree(directory, ignore_errors=True)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5)
    parser.add_argument("--pages", type=int, default=10)
    args = parser.parse_args()

    rates = node_rates(args.seconds)
    print("JS randomize+encode per report (Node, CSPRNG), beside Python's Question.randomize")
    print(f"{'mechanism':<26}{'JS reports/s':>14}{'µs/report':>11}{'Python/s':>12}{'JS/Py':>7}")
    for label, definition, answer in CASES:
        py = python_rate(definition, answer, args.seconds / 2)
        js = rates[label]
        print(f"{label:<26}{js:>14,.0f}{1e6 / js:>11.2f}{py:>12,.0f}{js / py:>7.1f}")

    print()
    page = survey_modules(demo_survey())
    client = tuple(name for name in MODULES if name not in (*FORM, "wire.js"))
    mechanisms = tuple(name for name in page if name not in (*CORE, *FORM))
    target = 30_000
    for what, names, limit in (
        (
            f"the client module (deniable.js and its static imports, {len(CORE)} modules):",
            CORE,
            target,
        ),
        (
            f"+ the demo survey's mechanism modules, loaded on demand ({len(mechanisms)}):",
            (*CORE, *mechanisms),
            None,
        ),
        (
            f"the demo survey's respond page, everything it loads ({len(page)}, form included):",
            page,
            None,
        ),
        (
            f"the client with every mechanism and keychain.js ({len(client)}; "
            "no form, no decoder):",
            client,
            None,
        ),
        (f"every module ({len(MODULES)}):", MODULES, None),
    ):
        raw = sum(len(static_file(name)) for name in names)
        packed = sum(len(gzip.compress(static_file(name), 9)) for name in names)
        met = limit is not None and raw < limit
        verdict = "" if limit is None else f"  (target < {limit:,}: {'met' if met else 'NOT met'})"
        print(f"{what:<82}{raw:>7,} bytes unminified, {packed:>6,} gzip{verdict}")
    print("every module, unminified bytes (* = the demo page loads it):")
    for name in MODULES:
        print(f"  {'*' if name in page else ' '} {name:<22}{len(static_file(name)):>7,}")

    if args.pages:
        times = submit_times(args.pages)
        print(
            f"\nrespond page, click Send -> acknowledged (Chromium, gunicorn, loopback, "
            f"{len(times)} pages): median {statistics.median(times) * 1000:.1f} ms, "
            f"max {max(times) * 1000:.1f} ms"
        )


if __name__ == "__main__":
    main()
