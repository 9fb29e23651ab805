"""The forwarder (relay/forwarder.py): its shuffle is uniform and from the OS CSPRNG, and
a pass with nothing due writes nothing to the relay's database."""

from __future__ import annotations

import contextlib
import math
import random
import secrets
import sqlite3
from collections import Counter
from itertools import permutations, product
from pathlib import Path
from typing import Any

import pytest

from deniable.relay import forwarder
from deniable.relay.storage import open_storage
from tests.relay.conftest import BACKENDS, _databases
from tests.relay.test_relay_app import stored_survey

SAMPLES = 200_000
CELLS = 24  # the orders of 4 blobs
# Each cell's count is Binomial(SAMPLES, 1/24): by Hoeffding and a union bound over the
# cells, |count - SAMPLES/24| reaches BOUND with probability at most 1e-6.
BOUND = math.sqrt(SAMPLES * math.log(2 * CELLS / 1e-6) / 2)


def test_the_batch_order_is_a_uniform_permutation_from_the_os_generator():
    """All 24 orders of 4 blobs come out equally often (false-alarm rate 1e-6), drawn by
    ``secrets.SystemRandom`` and not by the random module's seeded generator."""
    blobs = [bytes([n]) for n in range(4)]
    counts = Counter(tuple(forwarder.permuted(blobs)) for _ in range(SAMPLES))
    assert set(counts) == set(permutations(blobs))
    assert max(abs(count - SAMPLES / CELLS) for count in counts.values()) < BOUND, counts
    assert isinstance(forwarder._random, secrets.SystemRandom)
    random.seed(7)
    first = forwarder.permuted(list(range(64)))
    random.seed(7)
    assert forwarder.permuted(list(range(64))) != first  # equal with probability 1/64!


def test_the_bound_catches_the_classic_fisher_yates_slip():
    """The test above has the power it claims: swapping with any position (j in 0..n-1
    rather than i..n-1) gives orders with probabilities 8/256 to 15/256, whose expected
    counts lie beyond BOUND by more than six standard deviations (computed exactly over
    all 4^4 draws, no sampling)."""
    counts: Counter = Counter()
    for draws in product(range(4), repeat=4):
        items = [0, 1, 2, 3]
        for i, j in enumerate(draws):
            items[i], items[j] = items[j], items[i]
        counts[tuple(items)] += 1
    share = max(counts.values()) / 4**4
    spread = math.sqrt(SAMPLES * share * (1 - share))
    assert SAMPLES * (share - 1 / CELLS) - BOUND > 6 * spread


def test_a_noised_batch_is_sent_whole_in_one_random_order_with_its_real_count(monkeypatch):
    """send() hands the aggregator every blob of the batch, real and dummy, permuted
    together by ``permuted`` (not real units first), and the batch's real_units."""
    from types import SimpleNamespace

    from deniable.relay.storage import Batch

    real = [bytes([1, n]) for n in range(5)]
    dummies = [bytes([2, n]) for n in range(60)]
    batch = Batch(batch_id="b" * 32, survey_id="s", unit="a", sealed=real + dummies, real_units=5)
    sent = []

    def put_batch(url, survey_id, batch_id, unit, sealed, credential, *, timeout, real_units):
        sent.append((list(sealed), real_units))
        return SimpleNamespace(acknowledged=True)

    acknowledged = []
    storage = SimpleNamespace(
        get_survey=lambda _: SimpleNamespace(aggregator_url="http://x", credential="c"),
        acknowledged=acknowledged.append,
    )
    monkeypatch.setattr(forwarder.upstream, "put_batch", put_batch)
    assert forwarder.send(storage, {"FORWARD_TIMEOUT": 1}, batch)
    ((order, real_units),) = sent
    assert real_units == 5 and sorted(order) == sorted(batch.sealed)
    # The 5 real units all first has probability 5! 60! / 65! < 1.3e-7.
    assert [blob[0] for blob in order[:5]] != [1] * 5
    assert acknowledged == [batch]


TABLES = (
    "relayed_surveys",
    "windows",
    "held",
    "batches",
    "enrolment_digests",
    "admitted",
    "relay_secrets",
    "dummies",
    "encryption_public",
)
PASSES = 5


@pytest.fixture(params=BACKENDS)
def relay_storage(request, tmp_path):
    """The relay's storage relaying survey ``s`` (questions ``a`` and ``b``, min_batch 3)."""
    databases = _databases(request.param, tmp_path)
    _, database = next(databases)
    store = open_storage({"DATABASE": database})
    store.migrate()
    store.add_survey(stored_survey(), ["a", "b"])
    store.database = database
    yield store
    store.close()
    next(databases, None)


def footprint(store: Any, observer: Any) -> tuple:
    """What any write would change.  SQLite: the database file and its write-ahead log
    (bytes, size, mtime) and ``data_version``, which moves when another connection
    commits.  PostgreSQL: every row's version (``xmin``, ``ctid``) in every table, which
    an insert, update or delete changes."""
    if store.backend == "sqlite":
        files = []
        for path in (Path(store.path), Path(f"{store.path}-wal")):
            if path.exists():
                files.append((path.name, path.stat().st_size, path.stat().st_mtime_ns))
                files.append(path.read_bytes())
        (version,) = observer.execute("PRAGMA data_version").fetchone()
        return tuple(files), version
    return tuple(
        tuple(observer.execute(f"SELECT xmin::text, ctid::text FROM {table} ORDER BY ctid"))
        for table in TABLES
    )


def test_a_pass_with_nothing_due_writes_nothing(relay_storage, monkeypatch):
    """The forwarder runs a pass every FORWARD_INTERVAL (0.5 s by default) on every relay
    process; a pass that finds nothing due must only read: no write transaction (on SQLite
    it would queue for the one write lock among the submissions' commits, and grow the
    write-ahead log), no changed byte, no changed row.  Checked in each idle state: nothing
    held; units held but fewer than min_batch; min_batch held but the window open; and a
    formed batch that failed, waiting for its retry."""
    store = relay_storage
    writes = []
    write = store.dialect.write

    @contextlib.contextmanager
    def counted():
        writes.append(1)
        with write() as connection:
            yield connection

    config = {
        "WINDOW_SECONDS": 0.0,
        "MAX_BATCH_BYTES": 1 << 20,
        "FORWARD_TIMEOUT": 5.0,
        "FORWARD_INTERVAL": 0.5,
        "RETRY_MAX_SECONDS": 3600.0,
    }
    if store.backend == "sqlite":
        observer = sqlite3.connect(store.path, isolation_level=None)
    else:
        import psycopg

        observer = psycopg.connect(store.database, autocommit=True)

    def idle_passes(state: str, window: float) -> None:
        before = footprint(store, observer)
        writes.clear()
        monkeypatch.setattr(store.dialect, "write", counted)
        for _ in range(PASSES):
            counts = forwarder.forward_once(
                store, {**config, "WINDOW_SECONDS": window}, refresh_due=False
            )
            assert counts == {"refreshed": 0, "formed": 0, "acknowledged": 0, "failed": 0}, state
        monkeypatch.setattr(store.dialect, "write", write)
        assert writes == [], f"{state}: {len(writes)} write transactions in {PASSES} idle passes"
        assert footprint(store, observer) == before, f"{state}: the database changed"

    def hold(seed: int) -> None:
        units = [("a", bytes([seed]) * 80), ("b", bytes([seed + 100]) * 80)]
        assert store.hold("s", units, enrolment_token=None, key_id="abc") == 2

    try:
        idle_passes("nothing held", window=0.0)
        hold(1)
        hold(2)
        idle_passes("fewer than min_batch held", window=0.0)
        hold(3)
        idle_passes("the window still open", window=3600.0)
        assert len(store.form_batches("s", window=0.0)) == 2
        for batch in store.lease_batches(lease=60.0):
            store.failed(batch, "refused", retry_in=3600.0)
        idle_passes("a failed batch waiting for its retry", window=0.0)
    finally:
        observer.close()
