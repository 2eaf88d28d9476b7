"""The kinds of memory note: one vocabulary for the actors, storage, retrieval and metrics.

A value is stored as ``interaction_notes.note_type`` and is the ``type`` label of
``vivy_notes_written_total``, so the values never change.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["NoteType"]


class NoteType(StrEnum):
    """Kind of note (column ``note_type``, label ``type``)."""

    #: A note for one closed channel buffer.
    CONVERSATION = "conversation"
    #: A nightly topic-cluster note.
    TOPIC_CLUSTER = "topic_cluster"
