"""The relay's storage: held sealed units, formed batches, relayed surveys.

SQLite by default, PostgreSQL with a ``postgresql://`` DSN, over the service kit's
dialects (:mod:`deniable.service.storage`), as the aggregator's storage: numbered
migrations per backend (``migrations/<backend>/NNNN_name.sql``, applied by
:meth:`RelayStorage.migrate`),
short transactions, an acknowledgement only after COMMIT (SQLite: WAL,
``synchronous=FULL``).  Tables (``migrations/*/0001_initial.sql``):

* ``relayed_surveys``: what the relay forwards for whom: the aggregator's URL,
  its relay credential, its pinned signing key, the signed survey document as
  last verified (state, ``min_batch``, shuffle unit) and counters.
* ``held``: sealed units waiting for a batch.  The key is SHA-256 of (survey,
  unit, sealed bytes), so the same bytes sent twice are held once and the keys
  carry no arrival order; no row holds an address, a header or a time.  (The
  physical layout does: PostgreSQL's heap keeps insertion order, docs/relay.md.)
  ``key_id`` (0005) is the encryption key a unit was sealed to: a batch takes one key's.
* ``windows``: per (survey, unit), when the current batch window opened.
* ``batches``: batches formed and not yet acknowledged; their units stay in
  ``held`` (``batch_id`` set) until the aggregator acknowledges the batch.
* ``enrolment_digests``: SHA-256 digests of the aggregator's enrolment tokens;
  spending one records the digest of the submission it admitted, replaced by
  ``delivered`` (or ``discarded``) once none of its units is held any more.
* ``admitted`` (0004): per held unit, the digest of the token that admitted it; deleted
  with the unit (forwarded and acknowledged, or discarded), so no row links a token to
  a unit that left the relay (docs/relay.md).
* ``relay_secrets`` (0002): the key that turns a client address into the pseudonym
  the rate limiter counts (relay/api.py).
* ``encryption_public`` (0006): the verified encryption public key of each key id the
  relay accepts, for sealing a noised batch's dummies to its real units' key.
* ``dummies`` (0006): the dummy units of formed batches of a survey with relay noise,
  drawn once with their batch and deleted with it (relay/noise.py); ``batches.real_units``
  says how many of a batch's units are real.
* ``relayed_surveys.flushes`` (0007): the aggregator's flushes of the survey, against
  ``FLUSH_LIMIT``; ``held_waiting`` and ``held_counted_at``: the held count the aggregator
  may read, as of its last snapshot (relay/held_count.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deniable.service import storage as service_storage

from .base import RelayStorage
from .postgres import PostgresRelayStorage
from .records import Batch, RelayedSurvey, held_id, submission_digest, token_digest
from .sqlite import SqliteRelayStorage

EXTENSION = "deniable.relay.storage"

__all__ = [
    "EXTENSION",
    "Batch",
    "PostgresRelayStorage",
    "RelayStorage",
    "RelayedSurvey",
    "SqliteRelayStorage",
    "current_storage",
    "held_id",
    "init_app",
    "open_storage",
    "submission_digest",
    "token_digest",
]


# What opens the relay's storage in each backend (:func:`open_storage`).
OPENERS = {"sqlite": SqliteRelayStorage, "postgresql": PostgresRelayStorage}


def open_storage(settings: Mapping[str, Any]) -> RelayStorage:
    """The backend for ``settings["DATABASE"]`` (not yet migrated)."""
    return service_storage.open_storage(settings, OPENERS)


def init_app(app: Any) -> None:
    """Open (and migrate) the relay's storage, as the aggregator's storage is attached."""
    service_storage.init_app(app, opener=open_storage, extension=EXTENSION)


def current_storage() -> RelayStorage:
    from flask import current_app

    return current_app.extensions[EXTENSION]
