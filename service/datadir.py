"""The data directory and the files in it: private to the user the server runs as.

What a service keeps on disk (the SQLite database with its ``-wal``/``-shm`` and
lock files; the aggregator's signing key) is raw reports, sealed units and a private
key, so:

* directories it creates are mode 0700 whatever the umask (each missing one);
* a directory holding the database or the key that other users may write in is
  refused: they could replace the files or plant others beside them (a ``-wal``
  SQLite would replay, a lock-file symlink);
* a database file (or its ``-wal``/``-shm``) that other users may read is refused,
  as a readable key is (signing.py);
* lock files are opened without following a symbolic link (a link planted as a
  lock file would make the server create or lock a file elsewhere).

Each refusal is :class:`UnsafeFiles`, naming the path and the command that fixes
it: a misconfigured server never starts (a command exits with status 2), and a
running one that meets it (permissions changed under it) answers 503, as for any
database it cannot use.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from deniable.errors import StorageError

from .settings import SettingsError

PRIVATE_DIRECTORY = 0o700
OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
OTHERS_ANY = stat.S_IRWXG | stat.S_IRWXO


class UnsafeFiles(SettingsError, StorageError):
    """The data directory or a file in it is open to other users (see the module)."""

    exit_status = 2  # the command line's usage status: a setting to fix, not an outage


def private_directory(path: str | os.PathLike[str]) -> Path:
    """``path``, created (with missing parents) mode 0700, and checked (:func:`check_directory`)."""
    directory = Path(path)
    missing = []
    ancestor = directory
    while not os.path.lexists(ancestor) and ancestor != ancestor.parent:
        missing.append(ancestor)
        ancestor = ancestor.parent
    for created in reversed(missing):
        try:
            os.mkdir(created, PRIVATE_DIRECTORY)
        except FileExistsError:
            continue  # another process made it first: checked below like any other
        except OSError as error:
            raise UnsafeFiles(f"cannot create directory {created}: {error.strerror}") from None
        os.chmod(created, PRIVATE_DIRECTORY)  # Why: mkdir's mode is cut by the umask
    check_directory(directory)
    return directory


def check_directory(path: str | os.PathLike[str]) -> None:
    """Refuse a directory that users other than its owner may write in."""
    try:
        info = os.stat(path)
    except OSError as error:
        raise UnsafeFiles(f"directory {path}: {error.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeFiles(f"{path} is not a directory")
    if info.st_mode & OTHERS_WRITE:
        raise UnsafeFiles(
            f"directory {path}: mode {stat.S_IMODE(info.st_mode):04o} lets other users write "
            f"in it, next to the database and key; run chmod go-w {path} (or choose a private "
            "directory)"
        )


def check_private_file(path: str | os.PathLike[str], what: str) -> None:
    """Refuse a file (if it exists) that users other than its owner may read or write."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as error:
        raise UnsafeFiles(f"{what} {path}: {error.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        return  # not a file at all: SQLite says what is wrong
    if info.st_mode & OTHERS_ANY:
        raise UnsafeFiles(
            f"{what} {path}: mode {stat.S_IMODE(info.st_mode):04o} lets other users read it; "
            f"run chmod 600 {path}"
        )


def open_lock_file(path: str | os.PathLike[str]) -> int:
    """A descriptor of the lock file ``path`` (created 0600), never through a symbolic link."""
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(path, flags, 0o600)
    except OSError:
        if os.path.islink(path):
            raise UnsafeFiles(
                f"lock file {path} is a symbolic link; remove it (nothing but the server "
                "should create files in its data directory)"
            ) from None
        raise
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise UnsafeFiles(f"lock file {path} is not a regular file; remove it")
    return descriptor


__all__ = [
    "UnsafeFiles",
    "check_directory",
    "check_private_file",
    "open_lock_file",
    "private_directory",
]
