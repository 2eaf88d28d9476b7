"""Key-value facts about the database itself (the embedding model its vectors were made with)."""

from __future__ import annotations

from vivy.storage.db import Connection

__all__ = ["get_meta", "set_meta"]


def get_meta(conn: Connection, key: str) -> str | None:
    """The value stored under ``key``, or None."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_meta(conn: Connection, key: str, value: str) -> None:
    """Store ``value`` under ``key``."""
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )
