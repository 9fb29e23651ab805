"""SQLite's report id index in memory (aggregator/storage/sqlite_ids.py)."""

from __future__ import annotations

import uuid

import numpy as np

from deniable.aggregator.storage.sqlite_ids import IdIndex, prefix, probes


def test_probes_are_the_first_64_bits_of_each_id_in_order():
    ids = [str(uuid.UUID(int=n * 0x9E3779B97F4A7C15 % 2**128, version=4)) for n in range(500)]
    ids += ["00000000-0000-4000-8000-000000000000", "ffffffff-ffff-4fff-bfff-ffffffffffff"]
    assert probes(ids).tolist() == [prefix(i) for i in ids]
    assert prefix(ids[-1]) == 0xFFFFFFFFFFFF4FFF
    assert probes([]).size == 0


def test_settled_runs_stay_sorted_few_and_complete():
    index = IdIndex()
    every: list[str] = []
    for size in (1, 5, 3, 40, 2, 2, 2, 100, 7):
        batch = [str(uuid.uuid4()) for _ in range(size)]
        every += batch
        index._settle(batch)
    runs = index._settled
    assert len(runs) <= 5
    assert all(bool(np.all(run[:-1] <= run[1:])) for run in runs)
    assert sorted(np.concatenate(runs).tolist()) == sorted(prefix(i) for i in every)


def test_file_lock_excludes_other_descriptors_and_closes_its_own(tmp_path):
    import os
    import threading

    from deniable.aggregator.storage.sqlite_ids import FileLock

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
