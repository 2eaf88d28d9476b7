"""The LLM port: the one small interface the actors use to reach a language model.

Actors ask for three things: a structured generation validated against a pydantic schema,
embeddings with a task type, and a free-text chat answer. Implementations (Gemini, offline,
the metering wrapper) live next to this module; callers depend only on :class:`LLM` and the
value types defined here. Every failure surfaces as an :class:`~vivy.errors.LLMError`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel

from vivy.llm.schemas import ClusterInput, NoteInput, ProfileInput

__all__ = [
    "LLM",
    "ChatAnswer",
    "ChatRequest",
    "ChatTurn",
    "EmbeddingTask",
    "Generation",
    "GenerationRequest",
    "ModelTier",
    "Operation",
    "Payload",
    "T",
    "Usage",
    "l2_normalise",
]

#: The pydantic model a structured generation is validated against.
T = TypeVar("T", bound=BaseModel)

#: The structured input of a generation, read by the offline provider.
Payload = NoteInput | ProfileInput | ClusterInput


class Operation(StrEnum):
    """What an LLM call is for; a bounded label for metrics and logs."""

    #: Write a conversation note from a closed channel buffer.
    NOTE = "note"
    #: Turn one note into operations on a participant's profile.
    PROFILE_UPDATE = "profile_update"
    #: Group a guild's notes of one day into topic clusters.
    TOPIC_CLUSTER = "topic_cluster"
    #: Consolidate a user's profile against the day's notes.
    PROFILE_CONSOLIDATION = "profile_consolidation"
    #: Answer a user in chat.
    CHAT = "chat"
    #: Embed notes or queries.
    EMBED = "embed"


class ModelTier(Enum):
    """Which model family a call needs: cheap and fast, or slow and careful."""

    #: The per-conversation model (``gemini-2.0-flash`` by default).
    FLASH = "flash"
    #: The nightly model (``gemini-2.5-pro`` by default).
    PRO = "pro"


class EmbeddingTask(Enum):
    """Whether texts are stored documents or search queries (asymmetric retrieval)."""

    #: Texts stored for later search (notes).
    DOCUMENT = "document"
    #: A search query compared against stored documents.
    QUERY = "query"


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens a call consumed, as reported by the provider (zero offline)."""

    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class GenerationRequest(Generic[T]):
    """A structured generation: prompts for a model, and the structured input behind them.

    ``schema`` is the pydantic model the answer must validate against. ``payload`` carries
    the same content as ``prompt`` in structured form; the offline provider reads it instead
    of the prompt text.
    """

    operation: Operation
    tier: ModelTier
    system: str
    prompt: str
    schema: type[T]
    payload: Payload


@dataclass(frozen=True, slots=True)
class Generation(Generic[T]):
    """A validated answer: the parsed object, its token usage and who wrote it.

    ``quality`` is ``"gemini"`` or ``"offline"``, so stored output can say how it was made.
    """

    value: T
    usage: Usage
    model: str
    quality: str


@dataclass(frozen=True, slots=True)
class ChatTurn:
    """One message of the conversation the bot answers."""

    role: Literal["user", "model"]
    author: str
    text: str


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """A chat answer to produce: persona, conversation turns and retrieved memory.

    ``memory_context`` is the ``<background_facts>`` block built by the retriever; it is
    appended to the system instruction, never mixed into the users' turns.
    """

    system: str
    turns: tuple[ChatTurn, ...]
    memory_context: str = ""
    tier: ModelTier = ModelTier.FLASH


@dataclass(frozen=True, slots=True)
class ChatAnswer:
    """The bot's free-text answer and what it cost."""

    text: str
    usage: Usage
    model: str
    quality: str


def l2_normalise(values: Iterable[float]) -> list[float]:
    """``values`` scaled to unit Euclidean length.

    Raises :class:`ValueError` for a zero, empty or non-finite vector, which no provider
    should return and which cosine distance cannot handle.
    """
    vector = [float(value) for value in values]
    norm = math.sqrt(math.fsum(value * value for value in vector))
    if not vector or norm == 0.0 or not math.isfinite(norm):
        raise ValueError("cannot normalise a zero, empty or non-finite vector")
    return [value / norm for value in vector]


class LLM(Protocol):
    """A language model as Vivy uses it.

    ``dimension`` is the length of every embedding vector, ``embedding_model`` names the
    embedding model (stored with vectors so a model change can trigger a re-embed) and
    ``quality`` is ``"gemini"`` or ``"offline"``.
    """

    dimension: int
    embedding_model: str
    quality: str

    def model_for(self, tier: ModelTier) -> str:
        """The model name used for ``tier``."""
        ...

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """Generate a structured answer validated against ``request.schema``.

        Raises :class:`~vivy.errors.LLMInvalidOutput` when every attempt was blocked, empty
        or off-schema, :class:`~vivy.errors.LLMUnavailable` when the service kept failing.
        """
        ...

    async def embed(self, texts: Sequence[str], task: EmbeddingTask) -> list[list[float]]:
        """L2-normalised embeddings of ``texts`` (one vector each, ``dimension`` long)."""
        ...

    async def chat(self, request: ChatRequest) -> ChatAnswer:
        """A free-text answer to the conversation in ``request``."""
        ...

    async def aclose(self) -> None:
        """Release network resources; the object must not be used afterwards."""
        ...
