"""One LLM port from two providers: one writes and chats, the other embeds.

A server owner may run chat and notes on a local model (Ollama) while the shipped offline
model embeds, or the reverse; the actors still see one :class:`~vivy.llm.port.LLM`.
"""

from __future__ import annotations

from collections.abc import Sequence

from vivy.llm.port import (
    LLM,
    ChatAnswer,
    ChatRequest,
    EmbeddingTask,
    Generation,
    GenerationRequest,
    ModelTier,
    T,
)

__all__ = ["ComposedLLM"]


class ComposedLLM:
    """Generation and chat from ``generator``, embeddings from ``embedder``.

    ``quality`` is the generator's (it names who wrote the notes); ``dimension`` and
    ``embedding_model`` are the embedder's (they describe the stored vectors).
    """

    def __init__(self, generator: LLM, embedder: LLM) -> None:
        self.generator = generator
        self.embedder = embedder
        self.quality = generator.quality
        self.dimension = embedder.dimension
        self.embedding_model = embedder.embedding_model

    def model_for(self, tier: ModelTier) -> str:
        """The generator's model for ``tier``."""
        return self.generator.model_for(tier)

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """The generator's structured answer."""
        return await self.generator.generate(request)

    async def embed(self, texts: Sequence[str], task: EmbeddingTask) -> list[list[float]]:
        """The embedder's vectors."""
        return await self.embedder.embed(texts, task)

    async def chat(self, request: ChatRequest) -> ChatAnswer:
        """The generator's chat answer."""
        return await self.generator.chat(request)

    async def aclose(self) -> None:
        """Close both providers (the embedder even when the generator fails to close)."""
        try:
            await self.generator.aclose()
        finally:
            await self.embedder.aclose()
