"""A worker's memory stays flat under sustained ingest on SQLite.

Regression: 2,000,000 reports through the bulk route took the
aggregator's process tree from 160 to 755 MiB, about 300 bytes per report
without end, while the id index needs 16 bytes per id per process.  The cause
was the merges of recent ids into ``report_ids``: each one let its connection's
page cache and sorter grow to ``cache_size`` (64 MiB), SQLite freed it at that
connection's next transaction, and glibc kept the freed pages in the arena of
the thread that merged.  A worker runs 8 threads (and up to 16 arenas), so each
merge on a thread not seen before added tens of MiB to the resident set.

Here a fresh interpreter set up like a served worker (one malloc arena:
``limit_malloc_arenas``) ingests like the bulk route (8 threads, batches of
1,000, one at a time per process: ``Storage.bulk_turn``) with merges every
25,000 ids rather than 200,000, so 200,000 reports make eight merges, spread
over the threads.  After a warm-up of 50,000 reports (every thread has
written, the first merges are done), the process's anonymous resident memory
(``RssAnon``: heap, not mapped files) may grow by at most the id index's growth
plus ``CONSTANT_BOUND``.  Before the fix it grew by about 100 MiB; the bound
is a constant, not a timing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

__all__: list[str] = []

REPORTS = 200_000
WARM_UP = 50_000
BATCH = 1_000
THREADS = 8
MERGE_EVERY = 25_000
# Beyond the id index: Python's and glibc's own working set under this load
# (pools, a few batches in flight, numpy scratch).  Measured after the fix:
# a few MiB; before it, about 100 MiB.
CONSTANT_BOUND = 24 << 20
ROOT = Path(__file__).resolve().parents[2]


def _resident_anonymous() -> int:
    """This process's anonymous resident memory, in bytes (/proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no RssAnon in /proc/self/status")


def _workload(directory: str) -> dict[str, int]:
    """Ingest WARM_UP then REPORTS reports like the bulk route; memory before and after."""
    from deniable.aggregator.storage import open_storage, sqlite_ids
    from deniable.service.serving import limit_malloc_arenas
    from deniable.survey import Survey
    from deniable.wire import Report

    limit_malloc_arenas()  # as each served worker does before its threads start
    sqlite_ids.RECENT_IDS_LIMIT = MERGE_EVERY
    storage = open_storage({"DATABASE": str(Path(directory) / "memory.sqlite3")})
    storage.migrate()
    definition = {
        "format": "deniable.survey/1",
        "id": "memory",
        "title": "Memory",
        "questions": [
            {
                "id": "item",
                "type": "single_choice",
                "text": "Which item?",
                "epsilon": 1.0,
                "mechanism": "olh",
                "options": [f"item {i}" for i in range(64)],
            }
        ],
    }
    survey = Survey.from_dict(definition)
    storage.create_survey(survey, results_public=True)
    oracle = survey.question("item").oracle
    rng = np.random.default_rng(29)
    payloads = oracle.encode_many(oracle.randomize_many(rng.integers(0, 64, 4096), rng))
    counter = iter(range(1 << 40))
    lock = threading.Lock()

    def batch(_: int) -> None:
        with lock:
            start = next(counter) * BATCH
        raw = np.random.default_rng(start).bytes(16 * BATCH).hex()
        reports = [
            Report(
                id=f"{raw[i : i + 8]}-{raw[i + 8 : i + 12]}-4{raw[i + 13 : i + 16]}-"
                f"a{raw[i + 17 : i + 20]}-{raw[i + 20 : i + 32]}",
                question="item",
                payload=payloads[(start + i) % len(payloads)],
            )
            for i in range(0, 32 * BATCH, 32)
        ]
        with storage.bulk_turn():
            storage.add_reports("memory", reports, operator=True, respondents=[None] * BATCH)

    def index_bytes() -> int:
        index = storage._ids
        recent = sum(keys.nbytes + seqs.nbytes for keys, seqs in index._recent)
        return recent + sum(run.nbytes for run in index._settled)

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(batch, range(WARM_UP // BATCH)))
        before, index_before = _resident_anonymous(), index_bytes()
        list(pool.map(batch, range(REPORTS // BATCH)))
        after, index_after = _resident_anonymous(), index_bytes()
    stored = storage.count_reports("memory")
    storage.close()
    return {
        "before": before,
        "after": after,
        "index_before": index_before,
        "index_after": index_after,
        "stored": stored,
    }


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)")
def test_sqlite_ingest_memory_stays_flat(tmp_path):
    script = (
        "import json, sys\n"
        "from tests.aggregator.test_memory import _workload\n"
        "print(json.dumps(_workload(sys.argv[1])))\n"
    )
    finished = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    measured = json.loads(finished.stdout.strip().splitlines()[-1])
    assert measured["stored"] == WARM_UP + REPORTS
    growth = measured["after"] - measured["before"]
    allowed = measured["index_after"] - measured["index_before"] + CONSTANT_BOUND
    assert growth <= allowed, (
        f"resident memory grew by {growth / 2**20:.1f} MiB over {REPORTS:,} reports "
        f"(allowed: the id index's growth plus {CONSTANT_BOUND >> 20} MiB = "
        f"{allowed / 2**20:.1f} MiB): {measured}"
    )
