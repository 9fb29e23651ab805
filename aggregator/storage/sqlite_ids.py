"""SQLite ingest at scale: which report ids are stored, and whose turn it is to write.

Report ids are random (UUID 4).  A unique index over them takes every batch's
inserts all over the file, so at a million reports each commit of 1,000 reports
rewrote about a thousand index pages (migration 0007 has the figures).  Instead:

* ``report_ids`` (table) holds every id with ``seq`` up to
  ``report_id_merge.merged_through``; the batch that leaves more than
  :data:`RECENT_IDS_LIMIT` ids after that point merges them in, sorted, so each
  page of the table is written about once per merge;
* :class:`IdIndex` (this process's memory) holds the first 64 bits of every
  stored id, sorted: those after that point with their seqs (read from
  ``reports`` by seq), and those in ``report_ids``.  An id whose prefix is
  absent is new without any lookup; only the rest (retries, and about one id
  in 2**40 by chance at a million) are looked up and compared whole.

The database is the source of truth: under the write lock the index first
catches up with what other processes committed, and this process's own
inserts and merges reach it only after their COMMIT, so it never holds an id
that was rolled back.  :class:`FileLock` queues the writers.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from deniable.errors import StorageError

# Ids stored after the last merge before a batch merges them into report_ids: a
# merge rewrites report_ids about once, under the write lock, so it stays rare
# and bounded (each process keeps 16 bytes per id in memory meanwhile).
RECENT_IDS_LIMIT = 200_000
ID_LOOKUP = 500  # ids per statement (SQLite caps bound parameters)
# How often a writer waiting for the file lock tries again.  At 2 ms a waiter slept
# through about a millisecond of each handover, and bulk ingest over HTTP ran about
# 12% slower (benchmarks/ingest.py); a try costs a few microseconds.
_POLL_S = 0.0002


def prefix(report_id: str) -> int:
    """The first 64 bits of a canonical UUID string (its first 16 hex digits)."""
    return int(report_id[:8] + report_id[9:13] + report_id[14:18], 16)


def probes(ids: list[str]) -> np.ndarray:
    """The prefixes of canonical UUID strings, in order (one hex decode for all of them)."""
    if not ids:
        return np.empty(0, dtype=np.uint64)
    raw = bytes.fromhex("".join(ids).replace("-", ""))  # 16 bytes per id
    return np.frombuffer(raw, dtype=">u8")[::2].astype(np.uint64)


_NO_SEQS = np.empty(0, dtype=np.int64)


def reports_by_seq(
    connection: sqlite3.Connection, columns: str, seqs: list[int]
) -> Iterator[tuple]:
    """``columns`` of the reports with these seqs, ID_LOOKUP seqs per statement."""
    for start in range(0, len(seqs), ID_LOOKUP):
        part = seqs[start : start + ID_LOOKUP]
        yield from connection.execute(
            f"SELECT {columns} FROM reports WHERE seq IN ({','.join('?' * len(part))})", part
        )


@dataclass
class Staged:
    """What one ingest changed, applied to the index only after its COMMIT."""

    seqs: np.ndarray = field(default_factory=lambda: _NO_SEQS)  # the new rows' seqs, in order
    prefixes: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.uint64))
    merged_through: int | None = None

    @property
    def last_seq(self) -> int | None:
        return int(self.seqs[-1]) if self.seqs.size else None


def _combine(runs: list, run) -> None:
    """Append a sorted run; runs of similar size are merged (O(log n) runs, largest first).

    A run is a sorted prefix array, or a (sorted prefixes, their seqs) pair.
    """
    runs.append(run)
    size = len if isinstance(run, np.ndarray) else (lambda pair: len(pair[0]))
    while len(runs) > 1 and size(runs[-2]) <= 2 * size(runs[-1]):
        last, previous = runs.pop(), runs.pop()
        if isinstance(last, np.ndarray):
            runs.append(np.sort(np.concatenate([previous, last]), kind="stable"))
        else:
            keys = np.concatenate([previous[0], last[0]])
            order = np.argsort(keys, kind="stable")
            runs.append((keys[order], np.concatenate([previous[1], last[1]])[order]))


def _matches(keys: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each wanted prefix present in sorted ``keys``: the [lo, hi) range of its entries."""
    lo = np.searchsorted(keys, wanted, side="left")
    hi = np.searchsorted(keys, wanted, side="right")
    present = hi > lo
    return lo[present], hi[present]


class IdIndex:
    """This process's view of the stored report ids of a SQLite database (see module).

    Both parts are numpy arrays of 64-bit prefixes, kept as a few sorted runs:
    ``_settled`` for the ids in report_ids, ``_recent`` (prefix, seq) pairs for
    the ids stored after the last merge.  A per-id Python dict cost a hash
    insert per report in each worker (its own reports and every other worker's),
    about 15% of its Python time in a profile of bulk ingest; the arrays cost a hex
    decode and a sort per batch.
    """

    def __init__(self) -> None:
        self.merged_through: int | None = None
        self.last_seen = 0
        self._recent: list[tuple[np.ndarray, np.ndarray]] = []
        self._settled: list[np.ndarray] = []  # sorted runs of prefixes, largest first

    @property
    def recent_count(self) -> int:
        return sum(len(keys) for keys, _ in self._recent)

    def sync(self, connection: sqlite3.Connection) -> None:
        """Catch up with what any process committed (the caller holds the write lock)."""
        (merged,) = connection.execute("SELECT merged_through FROM report_id_merge").fetchone()
        if self.merged_through is None or merged < self.merged_through:
            # First use (or a restored, older file): read every settled id once.
            ids = [i for (i,) in connection.execute("SELECT report_id FROM report_ids")]
            self._settled, self._recent = [], []
            self._settle(ids)
            self.merged_through, self.last_seen = merged, merged
        elif merged != self.merged_through:  # another process merged
            # Its merge holds the ids known here up to it, and those stored since last_seen.
            moved, kept = [], []
            for keys, seqs in self._recent:
                mine = seqs <= merged
                moved.append(keys[mine])
                if not mine.all():
                    kept.append((keys[~mine], seqs[~mine]))  # still sorted
            since = connection.execute(
                "SELECT report_id FROM reports WHERE seq > ? AND seq <= ?", (self.last_seen, merged)
            ).fetchall()
            moved.append(probes([i for (i,) in since]))
            self._settle_prefixes(np.concatenate(moved))
            self._recent = kept
            self.merged_through = merged
            self.last_seen = max(merged, self.last_seen)
        rows = connection.execute(
            "SELECT seq, report_id FROM reports WHERE seq > ? ORDER BY seq", (self.last_seen,)
        ).fetchall()
        if rows:
            seqs, ids = zip(*rows, strict=True)
            self._add(np.array(seqs, dtype=np.int64), probes(list(ids)))

    def stored(
        self, connection: sqlite3.Connection, survey_id: str, ids: list[str], probes: np.ndarray
    ) -> dict[str, int]:
        """{id: seq} of those of ``ids`` this survey already holds (after :meth:`sync`).

        ``probes`` are the ids' prefixes (:func:`probes`, computed before the lock).
        Prefix matches are confirmed against the database, so a shared prefix (or
        an id another survey holds) is never mistaken for this survey's id.
        """
        found: dict[str, int] = {}
        candidates: list[int] = []  # seqs of recent rows whose prefix matches
        for keys, seqs in self._recent:
            for lo, hi in zip(*_matches(keys, probes), strict=True):
                candidates += seqs[lo:hi].tolist()
        wanted = set(ids)
        for seq, report_survey, report_id in reports_by_seq(
            connection, "seq, survey_id, report_id", candidates
        ):
            if report_survey == survey_id and report_id in wanted:
                found[report_id] = seq
        if len(found) == len(ids) or not self._settled:
            return found
        maybe = np.zeros(len(ids), dtype=bool)
        for run in self._settled:
            at = np.searchsorted(run, probes).clip(max=len(run) - 1)
            maybe |= run[at] == probes
        settled = [i for i, hit in zip(ids, maybe.tolist(), strict=True) if hit and i not in found]
        for start in range(0, len(settled), ID_LOOKUP):
            part = settled[start : start + ID_LOOKUP]
            found.update(connection.execute(
                "SELECT report_id, seq FROM report_ids"
                f" WHERE survey_id = ? AND report_id IN ({','.join('?' * len(part))})",
                (survey_id, *part),
            ).fetchall())  # fmt: skip
        return found

    def stage(
        self, connection: sqlite3.Connection, before: int, ids: list[str], prefixes: np.ndarray
    ) -> Staged:
        """The rows just inserted (``ids``, seq above ``before``), merged into report_ids if due.

        One writer at a time appends to an AUTOINCREMENT table that is never
        deleted from, so the batch took seqs ``before + 1`` onwards in order;
        the largest seq confirms it, else the rows are read back.
        """
        (last,) = connection.execute("SELECT MAX(seq) FROM reports").fetchone()
        if last == before + len(ids):
            staged = Staged(seqs=np.arange(before + 1, last + 1, dtype=np.int64), prefixes=prefixes)
        else:  # pragma: no cover - defensive: seqs were not consecutive after all
            rows = connection.execute(
                "SELECT seq, report_id FROM reports WHERE seq > ? ORDER BY seq", (before,)
            ).fetchall()
            staged = Staged(seqs=np.array([seq for seq, _ in rows], dtype=np.int64),
                            prefixes=probes([i for _, i in rows]))  # fmt: skip
        if staged.seqs.size and self.recent_count + staged.seqs.size > RECENT_IDS_LIMIT:
            last = staged.last_seq
            connection.execute(
                "INSERT INTO report_ids (survey_id, report_id, seq)"
                " SELECT survey_id, report_id, seq FROM reports WHERE seq > ? AND seq <= ?"
                " ORDER BY survey_id, report_id",
                (self.merged_through, last),
            )
            connection.execute("UPDATE report_id_merge SET merged_through = ?", (last,))
            staged.merged_through = last
        return staged

    def committed(self, staged: Staged) -> None:
        """Apply what :meth:`stage` returned, once its transaction has committed."""
        if staged.merged_through is None:
            self._add(staged.seqs, staged.prefixes)
            return
        recent = [keys for keys, _ in self._recent]
        self._settle_prefixes(np.concatenate([*recent, staged.prefixes]))
        self.merged_through = self.last_seen = staged.merged_through
        self._recent = []

    def _add(self, seqs: np.ndarray, prefixes: np.ndarray) -> None:
        """Remember recent rows (``seqs`` ascending, with their ids' prefixes)."""
        if not seqs.size:
            return
        order = np.argsort(prefixes, kind="stable")
        _combine(self._recent, (prefixes[order], seqs[order]))
        self.last_seen = int(seqs[-1])

    def _settle(self, ids: Iterable[str]) -> None:
        """Add a merge's ids to the settled prefixes."""
        self._settle_prefixes(probes(list(ids)))

    def _settle_prefixes(self, prefixes: np.ndarray) -> None:
        if prefixes.size:
            _combine(self._settled, np.sort(prefixes))


class FileLock:
    """An exclusive ``flock`` on a file beside the database: one holder among every
    thread and process, handed over within 0.2 ms.

    SQLite's own busy handler polls with sleeps of up to 100 ms, so two workers
    writing in turn left the write lock idle for most of each wait.  Each thread
    opens its own descriptor: a lock belongs to an open file description, so a
    shared one would let the threads of one process in together.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._opened: list[int] = []  # every thread's descriptor, closed by close()
        self._generation = 0
        weakref.finalize(self, _close_all, self._opened)

    def close(self) -> None:
        """Close every thread's descriptor (each reopens on its next use)."""
        self._generation += 1
        _close_all(self._opened)

    @contextlib.contextmanager
    def held(self, *, wait: float = 0.0) -> Iterator[bool]:
        """Yield True while holding the lock; False if it is still taken after ``wait`` s."""
        local = self._local
        if getattr(local, "depth", 0):  # already held by this thread: nested, not re-taken
            local.depth += 1
            try:
                yield True
            finally:
                local.depth -= 1
            return
        if getattr(local, "opened", None) != (os.getpid(), self._generation):
            try:
                local.descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError as error:
                raise StorageError(f"sqlite lock file {self.path}: {error}") from None
            local.opened = (os.getpid(), self._generation)
            self._opened.append(local.descriptor)
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(local.descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(_POLL_S)
        local.depth = 1
        try:
            yield True
        finally:
            local.depth = 0
            fcntl.flock(local.descriptor, fcntl.LOCK_UN)


def _close_all(descriptors: list[int]) -> None:
    while descriptors:
        with contextlib.suppress(OSError):
            os.close(descriptors.pop())
