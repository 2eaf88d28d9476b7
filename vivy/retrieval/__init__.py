"""Retrieval: the memory the chat model reads when the bot answers.

:class:`Retriever` builds the ``<background_facts>`` block of a reply and searches notes;
:class:`OperatorStore` answers the operator API with that same search, and members' profiles.
The searches' SQL lives in :mod:`vivy.storage.sqlite.search` (behind the port's ``search`` area),
one ranked search in :mod:`~vivy.retrieval.ranked`, the fusion and gate in
:mod:`~vivy.retrieval.ranking`, and the XML in :mod:`~vivy.retrieval.context`.
"""

from __future__ import annotations

from vivy.retrieval.operator import OperatorStore
from vivy.retrieval.ranked import NoteHit
from vivy.retrieval.retriever import (
    ConversationMessage,
    MemoryContext,
    RetrievalRequest,
    Retriever,
    RetrieverStatistics,
)
from vivy.retrieval.settings import RetrievalSettings

__all__ = [
    "ConversationMessage",
    "MemoryContext",
    "NoteHit",
    "OperatorStore",
    "RetrievalRequest",
    "RetrievalSettings",
    "Retriever",
    "RetrieverStatistics",
]
