"""The offline provider itself: the LLM port answered by the other rooms' functions."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import anyio.lowlevel
import anyio.to_thread

from vivy.errors import LLMError
from vivy.llm.offline.chat import offline_chat_answer
from vivy.llm.offline.clusters import cluster_notes
from vivy.llm.offline.embeddings import LOCAL_EMBEDDING_MODEL, Embedder, LocalEmbedder
from vivy.llm.offline.notes import write_note
from vivy.llm.offline.profiles import (
    consolidate_profile,
    conversation_operations,
    profile_operations,
)
from vivy.llm.port import (
    ChatAnswer,
    ChatRequest,
    EmbeddingTask,
    Generation,
    GenerationRequest,
    ModelTier,
    Operation,
    T,
    Usage,
)
from vivy.llm.schemas import (
    ClusterDraft,
    ClusterInput,
    ConversationDraft,
    NoteDraft,
    NoteInput,
    ProfileInput,
    ProfileOperations,
)

__all__ = [
    "OFFLINE_EMBEDDING_MODEL",
    "OFFLINE_MODEL",
    "OFFLINE_QUALITY",
    "OfflineLLM",
    "shared_embedder",
]

#: The name recorded as the model of offline generations.
OFFLINE_MODEL = "offline-extractive-v1"
#: The name recorded with offline embedding vectors: the local model's.
OFFLINE_EMBEDDING_MODEL = LOCAL_EMBEDDING_MODEL
#: The quality label of everything the offline provider writes.
OFFLINE_QUALITY = "offline"


_SHARED: list[LocalEmbedder] = []


def shared_embedder() -> LocalEmbedder:
    """The process's one :class:`LocalEmbedder`: the model's weights are loaded once however
    many offline providers a process makes (the tests make hundreds)."""
    if not _SHARED:
        _SHARED.append(LocalEmbedder())
    return _SHARED[0]


class OfflineLLM:
    """The LLM port without a key or network: deterministic extracts and rules, and the
    local embedding model (:class:`~vivy.llm.offline.embeddings.LocalEmbedder`)."""

    def __init__(self, *, embedder: Embedder | None = None, embed_on_thread: bool = False) -> None:
        """``embed_on_thread``: embed on a worker thread, one call at a time, so that the
        event loop keeps serving while a note and its evidence windows embed (tens of
        milliseconds); the live bot does. Inline otherwise: under trio's MockClock a task
        waiting on a thread counts as idle, and the importer replays on a virtual clock."""
        self._embedder = embedder if embedder is not None else shared_embedder()
        self._threads = anyio.CapacityLimiter(1) if embed_on_thread else None
        self.dimension = self._embedder.dimension
        self.embedding_model = self._embedder.model
        self.quality = OFFLINE_QUALITY

    def model_for(self, tier: ModelTier) -> str:
        """Always :data:`OFFLINE_MODEL`; the offline provider has no tiers."""
        return OFFLINE_MODEL

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """An offline answer computed from ``request.payload``, validated like any other."""
        await anyio.lowlevel.checkpoint()
        payload = request.payload
        value: NoteDraft | ProfileOperations | ClusterDraft
        if isinstance(payload, NoteInput) and request.schema is NoteDraft:
            value = write_note(payload)
        elif isinstance(payload, NoteInput) and request.schema is ConversationDraft:
            value = ConversationDraft(
                **write_note(payload).model_dump(), profiles=conversation_operations(payload)
            )
        elif isinstance(payload, ProfileInput) and request.schema is ProfileOperations:
            if request.operation is Operation.PROFILE_CONSOLIDATION:
                value = consolidate_profile(payload)
            else:
                value = profile_operations(payload)
        elif isinstance(payload, ClusterInput) and request.schema is ClusterDraft:
            value = cluster_notes(payload)
        else:
            raise LLMError(
                f"the offline provider cannot answer {request.operation.value} requests "
                f"with a {type(payload).__name__} payload and {request.schema.__name__} schema"
            )
        parsed = request.schema.model_validate(value.model_dump())
        return Generation(value=parsed, usage=Usage(), model=OFFLINE_MODEL, quality=self.quality)

    async def embed(self, texts: Sequence[str], task: EmbeddingTask) -> list[list[float]]:
        """The local model's embeddings; documents and queries are embedded alike."""
        if self._threads is not None:
            return await anyio.to_thread.run_sync(
                self._embedder.embed, texts, limiter=self._threads
            )
        await anyio.lowlevel.checkpoint()
        return self._embedder.embed(texts)

    async def chat(self, request: ChatRequest) -> ChatAnswer:
        """A reply that reads back the relevant remembered facts, marked as offline."""
        await anyio.lowlevel.checkpoint()
        return ChatAnswer(
            text=offline_chat_answer(request),
            usage=Usage(),
            model=OFFLINE_MODEL,
            quality=self.quality,
        )

    async def aclose(self) -> None:
        """Nothing to release."""
        await anyio.lowlevel.checkpoint()
