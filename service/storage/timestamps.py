"""Timestamps as both backends write and report them: ISO 8601 UTC with a ``Z``."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["iso", "utc_now"]


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(value: datetime | str | None) -> str | None:
    """A timestamp as ISO 8601 UTC with a ``Z`` suffix (None stays None)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
