"""The device's command line on a terminal: the core's :mod:`deniable.terminal` (the exit
statuses every Deniable program shares, the progress bar, quiet pipes)."""

from deniable.terminal import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_STATUSES,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    Progress,
    exit_status,
    quiet_pipe,
)

__all__ = [
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_STATUSES",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "Progress",
    "exit_status",
    "quiet_pipe",
]
