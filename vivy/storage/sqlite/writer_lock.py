"""One writing process per SQLite file: an exclusive lock beside the database.

SQLite lets several processes write one file in turn, but Vivy's writers must not share one:
two ``vivy run`` would each answer every mention, and two imports would each believe they
wrote the notes. So every writable open of a SQLite database (:meth:`Database.open
<vivy.storage.sqlite.db.Database.open>`, and the target of ``vivy db copy``) holds an exclusive
``flock`` on ``<database>.lock`` until it closes, and writes its pid and command into that
file; a second process is refused in one line naming them. Read-only opens take no lock, so
the read-only commands and the memory page still read while a writer runs. Within one process
the lock is shared (counted), so one process may hold several owners of its own database.
The kernel drops the lock when the process exits, however it ends.
"""

from __future__ import annotations

import fcntl
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vivy.errors import StorageError

__all__ = ["hold_writer_lock", "lock_path"]


@dataclass
class _Held:
    fd: int
    users: int


_held: dict[str, _Held] = {}
_guard = threading.Lock()


def lock_path(database: str | Path) -> Path:
    """The lock file of the SQLite database ``database``."""
    return Path(f"{database}.lock")


def _command() -> str:
    """What this process is, as a person would name it (``vivy import``)."""
    words = [Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"]
    words += [word for word in sys.argv[1:3] if not word.startswith("-")][:1]
    return " ".join(words)


def hold_writer_lock(database: str | Path) -> Callable[[], None]:
    """Take this process's writer lock on ``database``; returns the function that releases it.

    Raises :class:`StorageError` naming the holder when another process writes it."""
    path = lock_path(database)
    key = os.path.realpath(path)
    with _guard:
        held = _held.get(key)
        if held is None:
            held = _held[key] = _Held(_lock(database, path), 0)
        held.users += 1
    return lambda: _release(key)


def _lock(database: str | Path, path: Path) -> int:
    """The open, locked lock file of ``database``, marked with this process."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise StorageError(
            f"cannot open database {database}: its lock file {path} cannot be made "
            f"({exc.strerror or exc}); make the folder writable by this user"
        ) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "pid unknown"
        os.close(fd)
        raise StorageError(
            f"the database {database} is in use by another process ({holder}); one process "
            "writes a SQLite database at a time: stop that one first (several processes "
            "need PostgreSQL)"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()}: {_command()}\n".encode(), 0)
    return fd


def _release(key: str) -> None:
    with _guard:
        held = _held.get(key)
        if held is None:
            return
        held.users -= 1
        if held.users == 0:
            del _held[key]
            os.close(held.fd)  # closing the last descriptor drops the flock
