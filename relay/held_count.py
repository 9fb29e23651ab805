"""The held count the aggregator may read: the aggregator's signed request, a coarse answer.

:func:`held_count` checks the request (:mod:`deniable.relay_flush`, signed by the
aggregator's pinned key, as a flush is: :func:`.flushing.authenticated`) and answers with
the survey's snapshot (:class:`deniable.relay_held.HeldCount`): respondents whose answers
wait for a batch, counted at most every ``HELD_COUNT_SECONDS`` and stamped with when, so
the aggregator's survey page can say how many answers wait without learning when each
arrived (docs/relay.md, "What the aggregator learns").  Dummies are never held, hence never
counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deniable.relay_flush import parse_held_request
from deniable.relay_held import HeldCount

from .flushing import authenticated
from .storage import RelayStorage

__all__ = ["held_count"]


def held_count(
    storage: RelayStorage, config: Mapping[str, Any], survey_id: str, body: object
) -> HeldCount:
    """The survey's held count as of its last snapshot, once the request is the aggregator's."""
    stored = authenticated(storage, config, survey_id, parse_held_request(body))
    refresh = float(config.get("HELD_COUNT_SECONDS", 900.0))
    waiting, as_of = storage.held_count(survey_id, refresh)
    return HeldCount(
        survey=survey_id,
        waiting=waiting,
        min_batch=stored.min_batch,
        as_of=as_of,
        refresh_seconds=refresh,
    )
