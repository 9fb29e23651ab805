"""SQLite ingest at scale: which report ids are stored, and whose turn it is to write.

Report ids are random (UUID 4).  A unique index over them takes every batch's
inserts all over the file, so at a million reports each commit of 1,000 reports
rewrote about a thousand index pages (migration 0007 has the figures).  Instead:

* ``report_ids`` (table) holds every id with ``seq`` up to
  ``report_id_merge.merged_through``; the batch that leaves more than
  :data:`RECENT_IDS_LIMIT` ids after that point merges them in, sorted, so each
  page of the table is written about once per merge;
* :class:`IdIndex` (this process's memory) holds a 64-bit key of every stored
  (survey, id) pair, sorted: those after that point with their seqs (read from
  ``reports`` by seq), and those in ``report_ids``.  A pair whose key is absent
  is new without any lookup; only the rest (retries, and about one pair in
  2**44 by chance at a million) are looked up and compared whole.

The keys are :class:`IdKeys`: AES under a key drawn at random by each process,
so no client can choose ids whose keys collide.  Keying on the ids' own first
64 bits (as before) let a client that sends ids sharing them make every later
such id confirm all the earlier ones in the database, under the write lock:
20 such ids after 50,000 stored took 0.75 s and stalled every writer.
Now the work per incoming id is one probe whatever the ids.

The database is the source of truth: under the write lock the index first
catches up with what other processes committed, and this process's own
inserts and merges reach it only after their COMMIT, so it never holds an id
that was rolled back.  The kit's
:class:`~deniable.service.storage.file_lock.FileLock` queues the writers.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

__all__ = ["IdIndex", "IdKeys", "Staged", "release_memory", "reports_by_seq"]

# Ids stored after the last merge before a batch merges them into report_ids: a
# merge rewrites report_ids about once, under the write lock, so it stays rare
# and bounded (each process keeps 16 bytes per id in memory meanwhile).
RECENT_IDS_LIMIT = 200_000
ID_LOOKUP = 500  # ids per statement (SQLite caps bound parameters)
# How often a writer waiting for the file lock tries again.  At 2 ms a waiter slept
# through about a millisecond of each handover, and bulk ingest over HTTP ran about
# 12% slower (benchmarks/ingest.py); a try costs a few microseconds.
# Settled ids read per fetch when an index is first built (a list of every row at once
# cost about 150 bytes per id, all at the same time, at startup).
_LOAD_ROWS = 50_000


def _find_malloc_trim():
    """glibc's ``malloc_trim`` (None elsewhere: musl, macOS)."""
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        return None


_MALLOC_TRIM = _find_malloc_trim()


def release_memory(connection: sqlite3.Connection) -> None:
    """Give back the memory of a statement that touched report_ids as a whole.

    A merge (``INSERT ... SELECT ... ORDER BY``) fills its connection's page
    cache and sorter up to ``cache_size`` (64 MiB) while it runs, and SQLite
    frees them only at that connection's next transaction.  glibc then keeps the
    freed pages in the arena of the thread that merged, and a worker's threads
    use up to 8 per core: merges on new threads kept adding tens of MiB (with
    two workers, about 300 bytes per report stored, without end).  So, after
    the commit: ``PRAGMA shrink_memory`` frees the connection's cache now, and
    ``malloc_trim(0)`` returns every arena's free pages to the system (a few
    milliseconds, once per RECENT_IDS_LIMIT ids).  The cache is worth nothing
    after a commit anyway: in WAL mode a connection drops it at its next
    transaction whenever another connection has written meanwhile.
    """
    with contextlib.suppress(sqlite3.Error):
        connection.execute("PRAGMA shrink_memory")
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


class IdKeys:
    """64-bit keys of (survey, report id) pairs that no client can steer.

    A pair's key is the first 64 bits of AES-128 (a pseudorandom permutation of
    16-byte blocks, under a key drawn at random per process and never stored) of
    the id's 16 bytes XOR a mask of the survey (keyed BLAKE2b).  Within a survey
    distinct ids are distinct blocks, so their keys collide only by chance; across
    surveys the blocks coincide only for ids whose XOR is the masks' XOR, which no
    client knows.  One AES call (ECB: each 16-byte block enciphered on its own,
    exactly the permutation wanted here, no confidentiality involved) keys a whole
    batch, about as fast as decoding its hex.
    """

    _MASKS = 4096  # surveys whose masks are kept (recomputed, cheaply, past that)

    def __init__(self) -> None:
        self._cipher = Cipher(algorithms.AES(os.urandom(16)), modes.ECB())
        self._mask_key = os.urandom(32)
        self._masks: dict[str, bytes] = {}

    def mask(self, survey_id: str) -> bytes:
        found = self._masks.get(survey_id)
        if found is None:
            found = hashlib.blake2b(
                survey_id.encode("utf-8", "surrogatepass"), key=self._mask_key, digest_size=16
            ).digest()
            if len(self._masks) >= self._MASKS:
                self._masks.clear()
            self._masks[survey_id] = found
        return found

    def keys(self, survey_id: str, ids: list[str]) -> np.ndarray:
        """The keys of ``ids`` (canonical UUID strings) in ``survey_id``, in order."""
        if not ids:
            return np.empty(0, dtype=np.uint64)
        blocks = np.frombuffer(_id_bytes(ids), dtype=np.uint64).reshape(-1, 2)
        return self._encipher(blocks ^ np.frombuffer(self.mask(survey_id), dtype=np.uint64))

    def keys_of_rows(self, rows: list[tuple[str, str]]) -> np.ndarray:
        """The keys of (survey id, report id) rows, in order."""
        if not rows:
            return np.empty(0, dtype=np.uint64)
        surveys, ids = zip(*rows, strict=True)
        codes: dict[str, int] = {}
        index = np.array([codes.setdefault(s, len(codes)) for s in surveys], dtype=np.intp)
        masks = np.frombuffer(b"".join(map(self.mask, codes)), dtype=np.uint64).reshape(-1, 2)
        blocks = np.frombuffer(_id_bytes(list(ids)), dtype=np.uint64).reshape(-1, 2)
        return self._encipher(blocks ^ masks[index])

    def _encipher(self, blocks: np.ndarray) -> np.ndarray:
        encryptor = self._cipher.encryptor()
        enciphered = encryptor.update(blocks.tobytes()) + encryptor.finalize()
        return np.frombuffer(enciphered, dtype=np.uint64)[::2].copy()


def _id_bytes(ids: list[str]) -> bytes:
    """The 16 bytes of each canonical UUID string, concatenated (one hex decode)."""
    return bytes.fromhex("".join(ids).replace("-", ""))


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
    keys: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.uint64))
    merged_through: int | None = None
    new: frozenset[str] = frozenset()  # the new rows' report ids

    @property
    def last_seq(self) -> int | None:
        return int(self.seqs[-1]) if self.seqs.size else None


def _combine(runs: list, run) -> None:
    """Append a sorted run; runs of similar size are merged (O(log n) runs, largest first).

    A run is a sorted key array, or a (sorted keys, their seqs) pair.
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
    """For each wanted key present in sorted ``keys``: the [lo, hi) range of its entries."""
    lo = np.searchsorted(keys, wanted, side="left")
    hi = np.searchsorted(keys, wanted, side="right")
    present = hi > lo
    return lo[present], hi[present]


class IdIndex:
    """This process's view of the stored report ids of a SQLite database (see module).

    Both parts are numpy arrays of 64-bit keys (:class:`IdKeys`), kept as a few
    sorted runs: ``_settled`` for the ids in report_ids, ``_recent`` (key, seq) pairs for
    the ids stored after the last merge.  A per-id Python dict cost a hash
    insert per report in each worker (its own reports and every other worker's),
    about 15% of its Python time in a profile of bulk ingest; the arrays cost a hex
    decode, an AES call and a sort per batch.
    """

    def __init__(self) -> None:
        self.id_keys = IdKeys()
        self.merged_through: int | None = None
        self.last_seen = 0
        self._recent: list[tuple[np.ndarray, np.ndarray]] = []
        self._settled: list[np.ndarray] = []  # sorted runs of keys, largest first
        # Whether the last sync or stage read or wrote report_ids as a whole: its
        # memory is then worth giving back after the commit (:func:`release_memory`).
        self.heavy = False

    @property
    def recent_count(self) -> int:
        return sum(len(keys) for keys, _ in self._recent)

    def sync(self, connection: sqlite3.Connection) -> None:
        """Catch up with what any process committed (the caller holds the write lock)."""
        (merged,) = connection.execute("SELECT merged_through FROM report_id_merge").fetchone()
        self.heavy = False
        if self.merged_through is None or merged < self.merged_through:
            # First use (or a restored, older file): read every settled id once, a
            # part at a time, so only one part's row objects are alive at once.
            self._settled, self._recent = [], []
            cursor = connection.execute("SELECT survey_id, report_id FROM report_ids")
            while rows := cursor.fetchmany(_LOAD_ROWS):
                self._settle_keys(self.id_keys.keys_of_rows(rows))
            self.merged_through, self.last_seen = merged, merged
            self.heavy = True
        elif merged != self.merged_through:  # another process merged
            # Its merge holds the ids known here up to it, and those stored since last_seen.
            moved, kept = [], []
            for keys, seqs in self._recent:
                mine = seqs <= merged
                moved.append(keys[mine])
                if not mine.all():
                    kept.append((keys[~mine], seqs[~mine]))  # still sorted
            since = connection.execute(
                "SELECT survey_id, report_id FROM reports WHERE seq > ? AND seq <= ?",
                (self.last_seen, merged),
            ).fetchall()
            moved.append(self.id_keys.keys_of_rows(since))
            self._settle_keys(np.concatenate(moved))
            self._recent = kept
            self.merged_through = merged
            self.last_seen = max(merged, self.last_seen)
        rows = connection.execute(
            "SELECT seq, survey_id, report_id FROM reports WHERE seq > ? ORDER BY seq",
            (self.last_seen,),
        ).fetchall()
        if rows:
            seqs = np.array([row[0] for row in rows], dtype=np.int64)
            self._add(seqs, self.id_keys.keys_of_rows([row[1:] for row in rows]))

    def stored(
        self, connection: sqlite3.Connection, survey_id: str, ids: list[str], probes: np.ndarray
    ) -> dict[str, int]:
        """{id: seq} of those of ``ids`` this survey already holds (after :meth:`sync`).

        ``probes`` are the ids' keys in this survey (``id_keys.keys``, computed
        before the lock).  Key matches are confirmed against the database, so a
        chance collision is never mistaken for this survey's id; clients cannot
        make them happen, so each id costs at most about one row read.
        """
        found: dict[str, int] = {}
        candidates: list[int] = []  # seqs of recent rows whose key matches
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
            found.update(
                connection.execute(
                    "SELECT report_id, seq FROM report_ids"
                    f" WHERE survey_id = ? AND report_id IN ({','.join('?' * len(part))})",
                    (survey_id, *part),
                ).fetchall()
            )
        return found

    def stage(
        self, connection: sqlite3.Connection, before: int, ids: list[str], keys: np.ndarray
    ) -> Staged:
        """The rows just inserted (``ids``, seq above ``before``), merged into report_ids if due.

        One writer at a time appends to an AUTOINCREMENT table that is never
        deleted from, so the batch took seqs ``before + 1`` onwards in order;
        the largest seq confirms it, else the rows are read back.
        """
        (last,) = connection.execute("SELECT MAX(seq) FROM reports").fetchone()
        if last == before + len(ids):
            staged = Staged(seqs=np.arange(before + 1, last + 1, dtype=np.int64), keys=keys)
        else:  # pragma: no cover - defensive: seqs were not consecutive after all
            rows = connection.execute(
                "SELECT seq, survey_id, report_id FROM reports WHERE seq > ? ORDER BY seq",
                (before,),
            ).fetchall()
            staged = Staged(
                seqs=np.array([row[0] for row in rows], dtype=np.int64),
                keys=self.id_keys.keys_of_rows([row[1:] for row in rows]),
            )
        staged.new = frozenset(ids)
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
            self.heavy = True
        return staged

    def committed(self, staged: Staged) -> None:
        """Apply what :meth:`stage` returned, once its transaction has committed."""
        if staged.merged_through is None:
            self._add(staged.seqs, staged.keys)
            return
        recent = [keys for keys, _ in self._recent]
        self._settle_keys(np.concatenate([*recent, staged.keys]))
        self.merged_through = self.last_seen = staged.merged_through
        self._recent = []

    def _add(self, seqs: np.ndarray, keys: np.ndarray) -> None:
        """Remember recent rows (``seqs`` ascending, with their keys)."""
        if not seqs.size:
            return
        order = np.argsort(keys, kind="stable")
        _combine(self._recent, (keys[order], seqs[order]))
        self.last_seen = int(seqs[-1])

    def _settle_keys(self, keys: np.ndarray) -> None:
        """Add a merge's keys to the settled ones."""
        if keys.size:
            _combine(self._settled, np.sort(keys))
