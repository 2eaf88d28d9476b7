"""Key-value facts about the database itself (the embedding model its vectors were made with)."""

from __future__ import annotations

from vivy.memory.database import EmbeddingModel
from vivy.storage.db import Connection

__all__ = ["adopt_embedding_model", "get_meta", "set_meta"]


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


def adopt_embedding_model(conn: Connection, model: str, dimension: int) -> EmbeddingModel | None:
    """Record ``model`` as the embedding model on first use, or while no note exists.

    Returns the model recorded instead when notes embedded by another model exist (nothing
    changes then), else None.
    """
    stored = get_meta(conn, "embedding_model")
    stored_dim = get_meta(conn, "embedding_dimension")
    if stored == model and stored_dim == str(dimension):
        return None
    if stored is not None:
        notes = conn.execute("SELECT COUNT(*) FROM interaction_notes").fetchone()[0]
        if notes:
            return EmbeddingModel(stored, stored_dim)
    set_meta(conn, "embedding_model", model)
    set_meta(conn, "embedding_dimension", str(dimension))
    return None
