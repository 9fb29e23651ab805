"""The relay's storage: one :class:`RelayStorage` over a dialect, its stores written once.

The statements are those of :mod:`.surveys`, :mod:`.held` and :mod:`.batches`, each a
store over the same :class:`~deniable.service.storage.Dialect`; the backends differ
only in that dialect, and SQLite's group commit of held units (:mod:`.sqlite`).
"""

from __future__ import annotations

from pathlib import Path

from deniable.service.storage import Dialect, ServiceStorage, forwarded

from .batches import BatchStore
from .held import HeldStore
from .surveys import SurveyStore

__all__ = ["MIGRATIONS", "RelayStorage"]

MIGRATIONS = Path(__file__).with_name("migrations")


class RelayStorage(ServiceStorage):
    """The relay's storage protocol: ``surveys``, ``held`` and ``batches`` are its stores,
    and their methods are offered here too; its lifecycle (migrate, ping, close) is the
    kit's :class:`~deniable.service.storage.ServiceStorage`."""

    migrations_folder = MIGRATIONS
    version_table = "relay_schema_version"
    stamped = False

    def __init__(self, dialect: Dialect) -> None:
        super().__init__(dialect)
        self.surveys = SurveyStore(dialect)
        self.held = HeldStore(dialect)
        self.batches = BatchStore(dialect, self.held)

    add_survey = forwarded("surveys", SurveyStore.add_survey)
    update_survey = forwarded("surveys", SurveyStore.update_survey)
    set_credential = forwarded("surveys", SurveyStore.set_credential)
    accept_encryption_key = forwarded("surveys", SurveyStore.accept_encryption_key)
    get_survey = forwarded("surveys", SurveyStore.get_survey)
    list_surveys = forwarded("surveys", SurveyStore.list_surveys)
    remove_survey = forwarded("surveys", SurveyStore.remove_survey)
    secret = forwarded("surveys", SurveyStore.secret)
    add_enrolment_digests = forwarded("surveys", SurveyStore.add_enrolment_digests)
    sync_enrolment_digests = forwarded("surveys", SurveyStore.sync_enrolment_digests)
    enrolment_counts = forwarded("surveys", SurveyStore.enrolment_counts)
    count_flush = forwarded("surveys", SurveyStore.count_flush)
    flush_count = forwarded("surveys", SurveyStore.flush_count)
    hold = forwarded("held", HeldStore.hold)
    held_counts = forwarded("held", HeldStore.held_counts)
    held_rows = forwarded("held", HeldStore.held_rows)
    held_count = forwarded("held", HeldStore.held_count)
    form_batches = forwarded("batches", BatchStore.form_batches)
    lease_batches = forwarded("batches", BatchStore.lease_batches)
    release_leases = forwarded("batches", BatchStore.release_leases)
    acknowledged = forwarded("batches", BatchStore.acknowledged)
    discard = forwarded("batches", BatchStore.discard)
    failed = forwarded("batches", BatchStore.failed)
    pending_batches = forwarded("batches", BatchStore.pending_batches)
    discard_closed = forwarded("batches", BatchStore.discard_closed)
