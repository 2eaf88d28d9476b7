"""How notes' vectors are stored on either engine: the kinds of note they are filed under,
the length of their binary copy, and the dimension a new database starts with."""

from __future__ import annotations

from vivy.memory.notes import NoteType

__all__ = [
    "BINARY_PREFIX_DIMENSIONS",
    "EMBEDDING_DIMENSION_DEFAULT",
    "VEC_KINDS",
    "binary_dimensions",
]

EMBEDDING_DIMENSION_DEFAULT = 768


#: ``vec_notes.note_kind`` for each ``interaction_notes.note_type``. sqlite-vec filters text
#: metadata fastest up to 12 bytes, and "topic_cluster" is 13.
VEC_KINDS: dict[str, str] = {NoteType.CONVERSATION: "conv", NoteType.TOPIC_CLUSTER: "cluster"}


#: Leading dimensions of a vector kept in its binary copy. Embedding models trained with
#: Matryoshka losses (gemini-embedding-001) front-load information, and a shorter bit vector
#: halves the candidate scan with nearly the recall of an exact search (``vivy bench
#: retrieval`` reports both).
BINARY_PREFIX_DIMENSIONS = 384


def binary_dimensions(dimension: int) -> int:
    """Length of the binary copy of a ``dimension``-long vector."""
    return min(int(dimension), BINARY_PREFIX_DIMENSIONS)
