"""The relay's held count on a relayed survey's page: asked server-side, briefly, cached.

The survey page of an open relayed survey with public results says how many answers the
relay holds that have not yet made a full batch: the relay's snapshot
(:class:`deniable.relay_held.HeldCount`, counted at most every ``HELD_COUNT_SECONDS`` there),
asked for with the aggregator's signed request (:func:`..cli_relay.ask_relay`, the client
``close-survey --flush-relay`` uses too).  A page never waits long for it: the request runs
on a worker thread, the page waits at most :data:`WAIT_SECONDS` and otherwise says the
count is not known yet, and each answer (or failure) is kept :data:`CACHE_SECONDS`, so a
busy page asks the relay about once a minute per process, and an unreachable relay costs
one page at most :data:`WAIT_SECONDS`, then none for a while.
"""

from __future__ import annotations

from typing import Any

from flask import g

from ..background import BackgroundResults
from .times import exact

__all__ = ["CACHE_SECONDS", "TIMEOUT_SECONDS", "WAIT_SECONDS", "cache_key", "held_view"]

# How long an answer (or a failure) is shown before the relay is asked again.
CACHE_SECONDS = 60.0
# Longest a page waits for the relay; the request goes on in the background.
WAIT_SECONDS = 0.5
# Longest the background request waits for the relay (connect and read).
TIMEOUT_SECONDS = 5.0

_answers = BackgroundResults(
    name="deniable-relay-held", workers=2, capacity=1024, ttl=CACHE_SECONDS
)
_UNREACHABLE = {"known": False, "unreachable": True}


def _ask(key: Any, record: Any) -> dict[str, Any]:
    """The view of the relay's answer (never raises)."""
    from ..cli_relay import held_count

    try:
        count = held_count(key, record, TIMEOUT_SECONDS)
    except Exception:  # noqa: BLE001 - a failed request is a relay not reached, never a 500
        return _UNREACHABLE
    if count is not None:
        return {
            "known": True,
            "waiting": count.waiting,
            "as_of": count.as_of,
            "as_of_words": exact(count.as_of),
            "every": _period(count.refresh_seconds),
        }
    return _UNREACHABLE


def _period(seconds: float) -> str:
    """How often the relay counts, in words: "15 minutes", "an hour", "90 seconds"."""
    if seconds >= 3600 and seconds % 3600 == 0:
        hours = int(seconds // 3600)
        return "hour" if hours == 1 else f"{hours} hours"
    if seconds >= 60 and seconds % 60 == 0:
        minutes = int(seconds // 60)
        return "minute" if minutes == 1 else f"{minutes} minutes"
    return f"{seconds:g} seconds"


def held_view(record: Any) -> dict[str, Any] | None:
    """What the page says of the relay's held answers: ``{"known": True, "waiting", "as_of"}``,
    ``{"known": False, "unreachable": bool}``; None for a survey the page says nothing of
    (not relayed, closed, or with private results: its counts stay hidden as the respondent
    count does).  One answer per request (asked once, shown and cached alike)."""
    relay = record.survey.relay
    if relay is None or record.status != "open" or not record.results_public:
        return None
    memo = g.setdefault("deniable_relay_held", {})
    if record.id in memo:
        return memo[record.id]
    from ..signing import current_key

    slot = (record.id, relay.url)
    _, view = _answers.get(slot, _ask, current_key(), record, wait=WAIT_SECONDS)
    if view is None:  # not answered in time, nothing kept: being asked
        view = {"known": False, "unreachable": False}
    memo[record.id] = view
    return view


def cache_key(record: Any) -> str:
    """The held count's part of the cached page's key (empty for a page without it)."""
    view = held_view(record)
    if view is None:
        return ""
    if view["known"]:
        return f"held:{view['waiting']}:{view['as_of']}"
    return f"held:{'unreachable' if view['unreachable'] else 'pending'}"
