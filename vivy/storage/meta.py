"""Key-value facts about the database itself (the embedding model its vectors were made with).

Written once for both engines (:mod:`vivy.storage.dialect`).
"""

from __future__ import annotations

from vivy.memory.database import EmbeddingModel
from vivy.storage.dialect import Tx

__all__ = ["adopt_embedding_model", "get_meta", "other_embedding_model", "set_meta"]


def get_meta(tx: Tx, key: str) -> str | None:
    """The value stored under ``key``, or None."""
    row = tx.one("SELECT value FROM meta WHERE key = ?", (key,))
    return None if row is None else str(row[0])


def set_meta(tx: Tx, key: str, value: str) -> None:
    """Store ``value`` under ``key``."""
    tx.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def other_embedding_model(tx: Tx, model: str, dimension: int) -> EmbeddingModel | None:
    """The embedding model the stored notes were embedded with when it is not ``model`` at
    ``dimension``, else None (also while no note exists). Notes without a recorded model
    (a database older than the record) are judged by their vectors' length."""
    stored = get_meta(tx, "embedding_model"), get_meta(tx, "embedding_dimension")
    noted = tx.one("SELECT 1 FROM interaction_notes LIMIT 1") is not None
    if stored == (model, str(dimension)) or not noted:
        return None
    if stored[0] is not None:
        return EmbeddingModel(stored[0], stored[1])
    found = tx.scalar(f"SELECT {tx.dialect.vector_dims.format('embedding')} FROM vec_notes LIMIT 1")
    return None if found in (None, dimension) else EmbeddingModel("an unrecorded model", str(found))


def adopt_embedding_model(tx: Tx, model: str, dimension: int) -> EmbeddingModel | None:
    """Record ``model`` as the embedding model on first use, or while no note exists.

    Returns the model recorded instead when notes embedded by another model exist (nothing
    changes then), else None. Processes adopting a model at once take their turns. While no
    note exists the note-vector table takes ``dimension``: a new database is made for the
    configured model.
    """
    for statement in tx.dialect.lock_meta:
        tx.execute(statement)
    other = other_embedding_model(tx, model, dimension)
    if other is not None:
        return other
    empty = tx.one("SELECT 1 FROM interaction_notes LIMIT 1") is None
    if empty and get_meta(tx, "embedding_dimension") != str(dimension):
        tx.dialect.size_note_vectors(tx, dimension)
    set_meta(tx, "embedding_model", model)
    set_meta(tx, "embedding_dimension", str(dimension))
    return None
