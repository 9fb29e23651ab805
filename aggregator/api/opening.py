"""Opening a relay batch's sealed units into reports ready to store, in decryption processes.

Opening a blob (HPKE, :func:`deniable.sealing.opener`; its X25519 exchange
dominates) is most of a batch's cost, and validating what it holds needs no
database, so both run in the same place: :func:`open_chunk` opens each blob of a chunk
and validates its body against the survey, and gives, per blob, its reports as
compact ``(id, question, payload)`` tuples, or None for a blob that did not open or
holds no valid report of the unit (the caller drops and counts it).

A batch of at least :data:`PARALLEL_FROM` blobs is split into chunks of
:data:`CHUNK` blobs that :data:`DECRYPT_PROCESSES` spawned processes open at once;
:func:`opened_chunks` yields the chunks in the forwarded order as they are ready,
so the request's process stores chunk k while the others still open chunks k+1...
A chunk travels as raw bytes (the keys' 32 bytes each, the survey's canonical
definition, the blobs) and comes back as tuples of strings: pickling both ways costs
about 0.6 µs per report, some 1% of the opening (benchmarks/relay.py prints the CPU
time per report in the decryption processes and in the serving process).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from deniable.errors import DeniableError, StorageError
from deniable.survey import Survey
from deniable.wire import Report, parse_report, parse_submission, strict_json

__all__ = ["DECRYPT_PROCESSES", "Opened", "decryption_keys", "opened_chunks", "warm_when_relayed"]

# Batches of at least this many blobs are opened by several processes.
PARALLEL_FROM = 2_000
# Blobs per chunk: small enough that storing starts early and the last chunk's store is
# short, large enough that each chunk's round trip to a process costs little.
CHUNK = 1_000
# One per core this process may run on (its affinity, where the platform tells).
DECRYPT_PROCESSES = min(
    8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
)

# One blob's reports as (id, question, payload), or None: did not open, or invalid.
Opened = tuple[tuple[str, str, str], ...] | None

_pool: Any = None
_pool_lock = threading.Lock()


def decryption_keys() -> Any:
    """The aggregator's encryption keys (the current X25519 key and those it retired)."""
    from ..signing import current_key

    keys = current_key().encryption
    if keys is None:
        raise StorageError("the aggregator has no encryption key; run 'deniable-aggregator init'")
    return keys


def _triples(reports: list[Report]) -> tuple[tuple[str, str, str], ...]:
    return tuple((report.id, report.question, report.payload) for report in reports)


def _all_at_once(survey: Survey, unit: str, bodies: list[bytes | None]) -> list[Opened] | None:
    """A question unit's opened bodies validated as one submission, if each is a valid report
    of that unit and no two share an id (None otherwise: then each is validated alone)."""
    opened = [body for body in bodies if body is not None]
    if not unit or not opened:
        return None
    try:
        # One parse of all bodies: each is a JSON object (else parsing, or its check, fails).
        documents = strict_json.loads(b"[" + b",".join(opened) + b"]", "sealed bodies")
        if len(documents) != len(opened):
            return None
        reports = parse_submission({"reports": documents}, survey, max_batch=len(documents))
    except (DeniableError, ValueError, RecursionError):
        return None
    if len(reports) != len(opened) or any(report.question != unit for report in reports):
        return None  # an id twice (collapsed into one) or another question: one by one
    each = iter(reports)
    return [None if body is None else _triples([next(each)]) for body in bodies]


def _one(survey: Survey, unit: str, body: bytes | None) -> Opened:
    """The reports one opened body holds, or None if it did not open or holds none valid."""
    if body is None:
        return None
    try:
        document = strict_json.loads(body, "sealed body")
        if unit:
            report = parse_report(document, survey)
            return _triples([report]) if report.question == unit else None
        return _triples(
            parse_submission(document, survey, max_batch=len(survey.questions), one_respondent=True)
        )
    except (DeniableError, ValueError, RecursionError):
        return None


def open_chunk(keys: Any, survey: Survey, unit: str, size: int, blobs: list[bytes]) -> list[Opened]:
    """Each blob's reports, validated (None where it does not open or holds none valid)."""
    open_one = keys.opener(survey_id=survey.id, unit=unit, size=size)
    bodies: list[bytes | None] = []
    for blob in blobs:
        try:
            bodies.append(open_one(blob))
        except DeniableError:
            bodies.append(None)
    fast = _all_at_once(survey, unit, bodies)
    return fast if fast is not None else [_one(survey, unit, body) for body in bodies]


@lru_cache(maxsize=4)
def _keys(raw: tuple[bytes, ...]) -> Any:
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    from ..signing import EncryptionKeys

    current, *retired = (X25519PrivateKey.from_private_bytes(key) for key in raw)
    return EncryptionKeys(current=current, retired=tuple(retired))


@lru_cache(maxsize=16)
def _survey(definition: bytes) -> Survey:
    return Survey.from_json(definition)


def _open_chunk_here(
    raw: tuple[bytes, ...], definition: bytes, unit: str, size: int, blobs: list[bytes]
) -> list[Opened]:
    """:func:`open_chunk` in a decryption process (keys and survey parsed once per process)."""
    return open_chunk(_keys(raw), _survey(definition), unit, size, blobs)


def _decryption_pool() -> Any:
    """This process's pool of decryption processes (spawned, so no thread crosses a fork)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            _pool = ProcessPoolExecutor(
                DECRYPT_PROCESSES, mp_context=multiprocessing.get_context("spawn")
            )
            atexit.register(_pool.shutdown)  # before the interpreter tears its modules down
        return _pool


def _started() -> bool:
    """A decryption process's first task: what opening imports, then a pause long enough
    that the pool (which starts its processes on demand) starts every one of them."""
    import time

    from deniable import sealing  # noqa: F401  (cryptography's HPKE with it)

    time.sleep(0.2)
    return True


def warm_pool() -> None:
    """Start this process's decryption processes now (about 0.4 s), so the first large
    batch does not wait for them; a failure here is left to that batch to meet."""
    if DECRYPT_PROCESSES < 2:
        return
    with contextlib.suppress(Exception):
        pool = _decryption_pool()
        for started in [pool.submit(_started) for _ in range(DECRYPT_PROCESSES)]:
            started.result(timeout=120)


def warm_when_relayed(app: Any) -> None:
    """In the background: :func:`warm_pool` if this aggregator has issued a relay credential
    (only a relay sends batches). Called once per serving process, after its fork."""

    def run() -> None:
        from ..storage import current_storage

        with contextlib.suppress(Exception), app.app_context():
            credentials = current_storage().relay.list_credentials()
            if any(c["revoked_at"] is None for c in credentials):
                warm_pool()

    threading.Thread(target=run, name="deniable-warm-decryption", daemon=True).start()


def _discard_pool(pool: Any) -> None:
    """Forget a broken pool (a later batch starts a new one)."""
    global _pool
    with _pool_lock:
        if _pool is pool:
            _pool = None
    pool.shutdown(wait=False, cancel_futures=True)


@contextlib.contextmanager
def opened_chunks(
    keys: Any, survey: Survey, unit: str, size: int, blobs: list[bytes]
) -> Iterator[Iterator[list[Opened]]]:
    """The batch's chunks of :func:`open_chunk` results, in order, each as soon as it is ready.

    A small batch is one chunk opened here; a large one is opened by the decryption
    processes, all its chunks queued at once.  Leaving the block early (the caller
    failed) cancels the chunks not yet started.
    """
    if len(blobs) < PARALLEL_FROM or DECRYPT_PROCESSES < 2:
        yield iter([open_chunk(keys, survey, unit, size, blobs)])
        return
    from concurrent.futures import CancelledError
    from concurrent.futures.process import BrokenProcessPool

    raw = tuple(key.private_bytes_raw() for key in (keys.current, *keys.retired))
    definition = survey.canonical_bytes()

    def submit(pool: Any) -> list[Any]:
        return [
            pool.submit(_open_chunk_here, raw, definition, unit, size, blobs[start : start + CHUNK])
            for start in range(0, len(blobs), CHUNK)
        ]

    pool = _decryption_pool()
    futures: list[Any] = []
    try:
        try:
            futures = submit(pool)
        except RuntimeError:  # broken (a process died while idle) or shut down: a new pool
            _discard_pool(pool)
            pool = _decryption_pool()
            futures = submit(pool)
        yield (future.result() for future in futures)
    except (BrokenProcessPool, CancelledError):
        # A decryption process died during this batch (killed, out of memory; or during
        # another batch, which shut the pool down): this batch is not recorded, so the relay
        # sends it again, to a new pool.
        _discard_pool(pool)
        raise StorageError("a decryption process ended before the batch was opened") from None
    finally:
        for future in futures:
            future.cancel()
