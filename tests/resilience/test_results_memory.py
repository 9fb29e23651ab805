"""``?beta=`` cannot blow up a worker; the largest survey's dashboard page stays small.

Regression: the results cache was bounded by entries (256), not
bytes, and keyed by any float β.  On the largest allowed survey (100 questions
x 1,024 options) ten requests with distinct β took a worker from 138 to
656 MiB, each costing seconds of CPU while ``/health`` waited 4-4.7 s.

Here a live server (one worker, so every request reaches the worker measured)
holds such a survey.  After one warm-up computation (imports, the parsed
survey, one cached body: the steady state of any serving worker), 1,000
requests with distinct β go to it, plus the cached one again, while another
thread polls ``/health``.  Bound argument: a β outside the fixed set is refused (400) before
anything is folded or computed, so the 1,000 cost no memory at all; the allowed
ones are computed one at a time per process and cached as bytes within
``RESULTS_CACHE_BYTES`` (32 MiB), so RSS growth is bounded by the cache plus
one question's objects whatever the request count.

The same server then serves the survey's dashboard page: under 5 MB (the 12
largest categories per question are drawn, the rest are in the CSV and JSON
results), and headless Chromium builds its DOM (the time is printed).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time

import pytest
import requests

from .conftest import demo_survey_dict, random_reports

QUESTIONS, OPTIONS = 100, 1024
PAGE_LIMIT = 5_000_000
CHROMIUM = "/usr/bin/chromium"
DISTINCT = 1000
RSS_GROWTH_LIMIT = 64 << 20


def render_in_chromium(url: str, tmp_path) -> str | None:
    """The DOM headless Chromium builds from ``url`` (None if it is not installed)."""
    if not os.path.exists(CHROMIUM):
        if os.environ.get("DENIABLE_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{CHROMIUM} is missing and DENIABLE_REQUIRE_BROWSER=1")
        return None
    result = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def largest_survey() -> dict:
    definition = demo_survey_dict("largest")
    definition["questions"] = [
        {
            "id": f"q{index}",
            "type": "single_choice",
            "text": f"Question {index}?",
            "epsilon": 1.0,
            "options": [f"option {o}" for o in range(OPTIONS)],
        }
        for index in range(QUESTIONS)
    ]
    return definition


def test_distinct_betas_cannot_grow_a_worker(make_server, tmp_path):
    definition = largest_survey()
    server = make_server(str(tmp_path / "largest.sqlite3"), [definition], workers=1)
    bulk = f"{server.url}/api/v1/surveys/largest/reports/bulk"
    response = requests.post(
        bulk,
        json={"reports": random_reports(definition, 300)},
        headers={"Authorization": f"Bearer {server.token}"},
        timeout=60,
    )
    assert response.status_code == 201, response.text[:300]
    results = f"{server.url}/api/v1/surveys/largest/results"
    assert requests.get(results, timeout=300).status_code == 200  # warm-up: β = 0.05
    before = server.worker_rss()
    health: list[float] = []
    stop = threading.Event()

    def poll() -> None:
        with requests.Session() as session:
            while not stop.is_set():
                started = time.perf_counter()
                assert session.get(f"{server.url}/api/v1/health", timeout=30).status_code == 200
                health.append(time.perf_counter() - started)
                time.sleep(0.01)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    statuses: dict[int, int] = {}
    try:
        with requests.Session() as session:
            response = session.get(results, timeout=300)  # a cache hit: β = 0.05 again
            assert response.status_code == 200
            assert len(response.json()["questions"]) == QUESTIONS
            for index in range(DISTINCT):
                beta = f"{0.05 + (index + 1) * 1e-6:.7f}"
                status = session.get(results, params={"beta": beta}, timeout=60).status_code
                statuses[status] = statuses.get(status, 0) + 1
    finally:
        stop.set()
        poller.join()
    after = server.worker_rss()
    growth = max(after[pid] - before.get(pid, after[pid]) for pid in after)
    health.sort()
    p99 = health[min(len(health) - 1, int(len(health) * 0.99))]
    print(
        f"\nRSS before {sorted(v >> 20 for v in before.values())} MiB, after "
        f"{sorted(v >> 20 for v in after.values())} MiB; /health p50 "
        f"{1000 * health[len(health) // 2]:.1f} ms, p99 {1000 * p99:.1f} ms "
        f"({len(health)} polls)"
    )
    # The dashboard page of the same survey: the top categories only, the rest a link away.
    page = requests.get(f"{server.url}/surveys/largest", timeout=300)  # rendered, then cached
    assert page.status_code == 200 and len(page.content) < PAGE_LIMIT
    assert page.text.count('class="muted more"') == QUESTIONS
    started = time.perf_counter()
    dom = render_in_chromium(f"{server.url}/surveys/largest", tmp_path)
    rendered = time.perf_counter() - started
    if dom is not None:
        assert dom.count('data-type="single_choice"') == QUESTIONS
    print(
        f"dashboard page {len(page.content) / 2**20:.2f} MiB; headless Chromium --dump-dom "
        f"{'not installed' if dom is None else f'{rendered:.2f} s'}"
    )
    assert statuses == {400: DISTINCT}
    assert set(after) == set(before), "a worker died or was replaced"
    assert growth < RSS_GROWTH_LIMIT, f"a worker grew by {growth >> 20} MiB"
    assert p99 < 1.0, f"/health p99 {p99:.2f} s while results were computed"
