"""What the services' command lines print: one-line errors and plain tables.

The exit statuses, the progress bar and :func:`~deniable.terminal.quiet_pipe` are the
core's (:mod:`deniable.terminal`), shared with the device's ``deniable``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from deniable.terminal import EXIT_FAILURE


class CommandError(Exception):
    """A command failed for a reason worth one line on stderr.

    ``exit_status``: see the table in :mod:`deniable.terminal` (default 1).
    """

    def __init__(self, message: str, status: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.exit_status = status


def fail(message: str, status: int = EXIT_FAILURE) -> CommandError:
    """The :class:`CommandError` to raise: ``raise fail("no such survey", EXIT_NOT_FOUND)``."""
    return CommandError(message, status)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain text table; numbers are right-aligned."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    numeric = [all(_is_number(row[i]) for row in rows) and bool(rows) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(w) if right else v.ljust(w)
            for v, w, right in zip(values, widths, numeric, strict=True)
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(row) for row in cells)])


def _is_number(value: object) -> bool:
    if isinstance(value, int | float):
        return True
    text = str(value).rstrip("%").replace(",", "")
    try:
        float(text)
    except ValueError:
        return False
    return True


__all__ = ["CommandError", "fail", "format_table"]
