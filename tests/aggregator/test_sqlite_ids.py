"""SQLite's report id index in memory (aggregator/storage/sqlite_ids.py)."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from deniable.aggregator.storage.sqlite_ids import IdIndex, IdKeys


def test_keys_depend_on_the_whole_id_and_the_survey_and_not_on_a_shared_prefix():
    keys = IdKeys()
    ids = [str(uuid.UUID(int=n * 0x9E3779B97F4A7C15 % 2**128, version=4)) for n in range(500)]
    ids += ["00000000-0000-4000-8000-000000000000", "ffffffff-ffff-4fff-bfff-ffffffffffff"]
    mine = keys.keys("demo", ids)
    assert mine.dtype == np.uint64 and len(mine) == len(ids)
    assert mine.tolist() == [int(keys.keys("demo", [i])[0]) for i in ids]  # order kept
    assert len(set(mine.tolist())) == len(set(ids))
    rows = [("demo" if n % 2 else "other", i) for n, i in enumerate(ids)]
    assert keys.keys_of_rows(rows).tolist() == [
        int(keys.keys(survey, [i])[0]) for survey, i in rows
    ]
    other = keys.keys("other", ids)
    assert not set(other.tolist()) & set(mine.tolist())
    # Ids sharing their first 64 bits (a client may choose them) get unrelated keys.
    shared = [f"deadbeef-dead-beef-0000-{n:012x}" for n in range(1000)]
    spread = keys.keys("demo", shared)
    assert len(set(spread.tolist())) == 1000
    assert len({k >> 48 for k in spread.tolist()}) > 950  # even their top 16 bits scatter
    # Another process (another random key) computes other keys.
    assert IdKeys().keys("demo", ids[:4]).tolist() != mine[:4].tolist()
    assert keys.keys("demo", []).size == 0 and keys.keys_of_rows([]).size == 0


def test_settled_runs_stay_sorted_few_and_complete():
    index = IdIndex()
    every = []
    for size in (1, 5, 3, 40, 2, 2, 2, 100, 7):
        batch = index.id_keys.keys("demo", [str(uuid.uuid4()) for _ in range(size)])
        every += batch.tolist()
        index._settle_keys(batch)
    runs = index._settled
    assert len(runs) <= 5
    assert all(bool(np.all(run[:-1] <= run[1:])) for run in runs)
    assert sorted(np.concatenate(runs).tolist()) == sorted(every)


def test_file_lock_excludes_other_descriptors_and_closes_its_own(tmp_path):
    import os
    import threading

    from deniable.service.storage.file_lock import FileLock

    lock = FileLock(tmp_path / "db.write-lock")
    other = FileLock(tmp_path / "db.write-lock")  # another process would look the same
    with lock.held() as ours:
        assert ours
        with lock.held() as nested:  # the same thread again: nested, not re-taken
            assert nested
        with other.held(wait=0.01) as theirs:
            assert not theirs
        seen = []
        thread = threading.Thread(target=lambda: seen.append(lock.held(wait=0.01).__enter__()))
        thread.start()
        thread.join()
        assert seen == [False]  # another thread of this process waits its turn too
    with other.held() as theirs:
        assert theirs
    opened = list(lock._opened)
    lock.close()
    assert lock._opened == []
    for descriptor in opened:
        try:
            os.fstat(descriptor)
            still_open = True
        except OSError:
            still_open = False
        assert not still_open or descriptor in other._opened
    with lock.held() as again:  # reopened after close
        assert again


# -- ids chosen by an attacker ----------------------------------------------------


def _colliding(count: int, start: int = 0) -> list[str]:
    """Valid lowercase UUID text whose first 64 bits are all equal (a client chooses them)."""
    return [
        f"deadbeef-dead-beef-{(n >> 48) & 0xFFFF:04x}-{n & (2**48 - 1):012x}"
        for n in range(start + 1, start + count + 1)
    ]


def _vm_steps(storage, action) -> int:
    """SQLite virtual-machine instructions ``action`` runs on this thread's connection."""
    connection = storage._thread_connection()
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    connection.set_progress_handler(count, 50)
    try:
        action()
    finally:
        connection.set_progress_handler(None, 0)
    return steps[0] * 50


@pytest.mark.parametrize("recent_limit", [200_000, 1500], ids=["recent", "merged"])
def test_ids_sharing_a_prefix_cost_no_more_than_random_ones(tmp_path, monkeypatch, recent_limit):
    """Ingest work per report is bounded whatever ids clients choose.

    An id index keyed on the ids' first 64 bits confirmed, for each incoming id, every
    stored id with that prefix: 20 colliding ids after 3,000 stored ones read 60,000 rows.
    """
    from deniable.aggregator.storage import open_storage, sqlite_ids
    from deniable.errors import Conflict
    from deniable.survey import Survey
    from deniable.wire import Report

    from .conftest import demo_survey_dict, random_reports

    # "merged": most ids are in report_ids by the time they are sent again.
    monkeypatch.setattr(sqlite_ids, "RECENT_IDS_LIMIT", recent_limit)
    storage = open_storage({"DATABASE": str(tmp_path / "ids.sqlite3")})
    try:
        storage.migrate()
        for survey_id in ("demo", "other"):
            survey = Survey.from_dict(demo_survey_dict(survey_id))
            storage.create_survey(survey, results_public=True)
        bodies = [
            r for r in random_reports(demo_survey_dict(), 400, seed=3) if r["question"] == "smoker"
        ]

        def reports(ids: list[str]) -> list[Report]:
            # The body follows the id, so sending an id again is a retry.
            return [
                Report(
                    id=i,
                    question="smoker",
                    payload=bodies[int(i[-4:], 16) % len(bodies)]["payload"],
                )
                for i in ids
            ]

        stored = _colliding(3000)
        for start in range(0, len(stored), 1000):
            storage.add_reports("demo", reports(stored[start : start + 1000]), operator=True)
        storage.add_reports("other", reports(stored[:1000]), operator=True)  # the same ids
        storage.fold("demo")
        storage.fold("other")
        honest = [str(uuid.uuid4()) for _ in range(20)]
        baseline = _vm_steps(storage, lambda: storage.add_reports("demo", reports(honest)))
        attack = _colliding(20, start=10_000)
        steps = _vm_steps(storage, lambda: storage.add_reports("demo", reports(attack)))
        assert steps < 2 * baseline + 2000, (steps, baseline)
        retried = _vm_steps(storage, lambda: storage.add_reports("demo", reports(stored[:20])))
        assert retried < 2 * baseline + 2000, (retried, baseline)
        # Still exact: a retry is acknowledged without a second row; a reused id is refused,
        # and the same id in another survey is a different report.
        before = storage.count_reports("demo")
        assert storage.add_reports("demo", reports(stored[5:6])) == stored[5:6]
        assert storage.count_reports("demo") == before
        changed = Report(id=stored[5], question="transport", payload=bodies[0]["payload"])
        with pytest.raises(Conflict):
            storage.add_reports("demo", [changed])
        storage.add_reports("other", reports(stored[2000:2001]))
        assert storage.count_reports("other") == 1001
    finally:
        storage.close()
