"""Helpers shared by the tests that look into storage."""

from __future__ import annotations

from vivy.storage import buffers as store
from vivy.storage.db import Connection

__all__ = ["count_buffers"]


def count_buffers(conn: Connection) -> dict[str, int]:
    """Number of buffers by status (``open`` and ``closed``), through the storage queries."""
    return {
        "open": len(store.open_buffer_rows(conn)),
        "closed": len(store.closed_buffer_ids(conn)),
    }
