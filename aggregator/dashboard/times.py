"""Times as people read them: "3 minutes ago", with the exact UTC time beside it.

The dashboard shows a stored timestamp (ISO 8601 UTC, :mod:`deniable.service.storage.timestamps`)
as a ``<time>`` element: words in the page, the exact minute in its ``title`` (shown on
hover) and the machine-readable instant in ``datetime``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape

from markupsafe import Markup

__all__ = ["ago", "exact", "time_element"]

_MINUTE, _HOUR, _DAY = 60, 3600, 86400


def _parsed(value: str) -> datetime:
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _count(number: int, unit: str) -> str:
    return f"{number} {unit}{'' if number == 1 else 's'} ago"


def ago(value: str, now: datetime | None = None) -> str:
    """``value`` in words relative to ``now``: "just now", "3 minutes ago", ... "2 May 2026"."""
    moment = _parsed(value)
    seconds = ((now or datetime.now(UTC)) - moment).total_seconds()
    if seconds < _MINUTE:
        return "just now"
    if seconds < _HOUR:
        return _count(int(seconds // _MINUTE), "minute")
    if seconds < _DAY:
        return _count(int(seconds // _HOUR), "hour")
    if seconds < 30 * _DAY:
        return _count(int(seconds // _DAY), "day")
    return f"{moment.day} {moment:%b %Y}"  # older: the date is clearer than "7 months ago"


def exact(value: str) -> str:
    """``value`` to the minute, in UTC: "2026-11-28 13:50 UTC"."""
    return f"{_parsed(value):%Y-%m-%d %H:%M} UTC"


def time_element(value: str | None) -> Markup:
    """A ``<time>`` with the words, the exact time on hover, and the instant (empty: "—")."""
    if not value:
        return Markup("—")
    return Markup(
        f'<time datetime="{escape(value)}" title="{escape(exact(value))}">'
        f"{escape(ago(value))}</time>"
    )
