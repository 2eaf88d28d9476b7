"""Metering for the LLM port: calls, tokens, latency and failures of any implementation.

:class:`MeteredLLM` wraps an :class:`~vivy.llm.port.LLM` and reports each call to an
:class:`LLMMeter` (the Prometheus metrics module implements one). Labels stay bounded: the
operation is an :class:`~vivy.llm.port.Operation` value, the model a configured name and
the outcome an :class:`Outcome` (the metrics take that enum as their label type). Latency is
read from the injected clock, so virtual time in tests gives exact durations. The provider of
each call is a :class:`Provider` label: generation and chat may come from one provider and
embeddings from another.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from vivy.clock import Clock
from vivy.errors import LLMInvalidOutput, LLMUnavailable
from vivy.llm.composed import ComposedLLM
from vivy.llm.port import (
    LLM,
    ChatAnswer,
    ChatRequest,
    EmbeddingTask,
    Generation,
    GenerationRequest,
    ModelTier,
    Operation,
    T,
)

__all__ = [
    "CountingMeter",
    "LLMMeter",
    "LLMObservation",
    "MeterStatistics",
    "MeteredLLM",
    "NullMeter",
    "Outcome",
    "Provider",
    "outcome_of",
]


class Provider(StrEnum):
    """Who served an LLM call (label ``provider``); an LLM's ``quality`` names it."""

    #: Google's Gemini API, through google-genai.
    GEMINI = "gemini"
    #: An OpenAI-compatible endpoint (Ollama, vLLM, llama.cpp, LM Studio, OpenAI, ...).
    OPENAI = "openai"
    #: The offline provider, in this process.
    OFFLINE = "offline"

    @classmethod
    def of(cls, llm: LLM) -> Provider:
        """The provider an LLM's ``quality`` names; ValueError when it names none."""
        try:
            return cls(llm.quality)
        except ValueError:
            raise ValueError(
                f"an LLM's quality must name its provider ({', '.join(cls)}), not {llm.quality!r}"
            ) from None


class Outcome(StrEnum):
    """How an LLM call ended: every outcome a meter can receive (label ``outcome``)."""

    #: A valid answer.
    OK = "ok"
    #: An answer that was blocked, empty, unparsable or failed its schema.
    INVALID_OUTPUT = "invalid_output"
    #: The service could not be reached or kept failing.
    UNAVAILABLE = "unavailable"
    #: Any other failure.
    ERROR = "error"


class LLMMeter(Protocol):
    """Receives one observation per LLM call."""

    def observe_llm(
        self,
        *,
        operation: str,
        provider: str,
        model: str,
        outcome: str,
        input_tokens: int,
        output_tokens: int,
        seconds: float,
    ) -> None:
        """Record a finished call; must not block or raise."""
        ...


class NullMeter:
    """A meter that discards every observation."""

    def observe_llm(
        self,
        *,
        operation: str,
        provider: str,
        model: str,
        outcome: str,
        input_tokens: int,
        output_tokens: int,
        seconds: float,
    ) -> None:
        """Discard the observation."""


@dataclass(frozen=True, slots=True)
class LLMObservation:
    """One call as a :class:`CountingMeter` recorded it."""

    operation: str
    provider: str
    model: str
    outcome: str
    input_tokens: int
    output_tokens: int
    seconds: float


@dataclass(frozen=True, slots=True)
class MeterStatistics:
    """Totals over every observation a :class:`CountingMeter` holds."""

    calls: int
    input_tokens: int
    output_tokens: int
    seconds: float
    outcomes: Mapping[str, int] = field(default_factory=dict)


class CountingMeter:
    """A meter that keeps every observation in memory, for tests and benchmarks."""

    def __init__(self) -> None:
        self.observations: list[LLMObservation] = []

    def observe_llm(
        self,
        *,
        operation: str,
        provider: str,
        model: str,
        outcome: str,
        input_tokens: int,
        output_tokens: int,
        seconds: float,
    ) -> None:
        """Append the observation."""
        self.observations.append(
            LLMObservation(
                operation, provider, model, outcome, input_tokens, output_tokens, seconds
            )
        )

    def calls(self, *, operation: str | None = None, outcome: str | None = None) -> int:
        """How many calls matched ``operation`` and ``outcome`` (None matches any)."""
        return sum(
            1
            for seen in self.observations
            if (operation is None or seen.operation == operation)
            and (outcome is None or seen.outcome == outcome)
        )

    def statistics(self, *, operation: str | None = None) -> MeterStatistics:
        """Totals of calls, tokens and seconds, and the count of each outcome.

        With ``operation``, only that operation's calls are totalled.
        """
        seen = [o for o in self.observations if operation is None or o.operation == operation]
        return MeterStatistics(
            calls=len(seen),
            input_tokens=sum(o.input_tokens for o in seen),
            output_tokens=sum(o.output_tokens for o in seen),
            seconds=sum(o.seconds for o in seen),
            outcomes=dict(Counter(o.outcome for o in seen)),
        )

    def by_operation(self) -> dict[str, MeterStatistics]:
        """:meth:`statistics` of each operation observed, by operation label."""
        return {
            operation: self.statistics(operation=operation)
            for operation in sorted({o.operation for o in self.observations})
        }


def outcome_of(error: BaseException) -> Outcome:
    """The outcome of a failed call."""
    if isinstance(error, LLMInvalidOutput):
        return Outcome.INVALID_OUTPUT
    if isinstance(error, LLMUnavailable):
        return Outcome.UNAVAILABLE
    return Outcome.ERROR


class MeteredLLM:
    """An :class:`~vivy.llm.port.LLM` that reports every call of ``inner`` to ``meter``.

    Generations and chat are labelled with ``provider``, embeddings with
    ``embedding_provider``; they default to the providers the ``quality`` of ``inner`` and of
    its embedder name (a :class:`~vivy.llm.composed.ComposedLLM`'s may differ). Failures
    are reported and re-raised unchanged; cancellation is not a failure and is not reported.
    """

    def __init__(
        self,
        inner: LLM,
        meter: LLMMeter,
        clock: Clock,
        *,
        provider: Provider | None = None,
        embedding_provider: Provider | None = None,
    ) -> None:
        self.inner = inner
        self.provider = provider if provider is not None else Provider.of(inner)
        embedder = inner.embedder if isinstance(inner, ComposedLLM) else inner
        self.embedding_provider = (
            embedding_provider if embedding_provider is not None else Provider.of(embedder)
        )
        self.dimension = inner.dimension
        self.embedding_model = inner.embedding_model
        self.quality = inner.quality
        self._meter = meter
        self._clock = clock

    def model_for(self, tier: ModelTier) -> str:
        """The inner LLM's model for ``tier``."""
        return self.inner.model_for(tier)

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """The inner generation, metered under ``request.operation``."""
        started = self._clock.monotonic()
        try:
            result = await self.inner.generate(request)
        except Exception as error:
            self._observe(request.operation, self.model_for(request.tier), started, error)
            raise
        self._observe(
            request.operation,
            result.model,
            started,
            None,
            result.usage.input_tokens,
            result.usage.output_tokens,
        )
        return result

    async def embed(self, texts: Sequence[str], task: EmbeddingTask) -> list[list[float]]:
        """The inner embeddings, metered as ``embed``."""
        started = self._clock.monotonic()
        try:
            vectors = await self.inner.embed(texts, task)
        except Exception as error:
            self._observe(Operation.EMBED, self.embedding_model, started, error)
            raise
        self._observe(Operation.EMBED, self.embedding_model, started, None)
        return vectors

    async def chat(self, request: ChatRequest) -> ChatAnswer:
        """The inner chat answer, metered as ``chat``."""
        started = self._clock.monotonic()
        try:
            answer = await self.inner.chat(request)
        except Exception as error:
            self._observe(Operation.CHAT, self.model_for(request.tier), started, error)
            raise
        self._observe(
            Operation.CHAT,
            answer.model,
            started,
            None,
            answer.usage.input_tokens,
            answer.usage.output_tokens,
        )
        return answer

    async def aclose(self) -> None:
        """Close the inner LLM."""
        await self.inner.aclose()

    def _observe(
        self,
        operation: Operation,
        model: str,
        started: float,
        error: BaseException | None,
        input_tokens: int = 0,
        output_tokens: int = 0,
    ) -> None:
        """Report one call to the meter."""
        provider = self.embedding_provider if operation is Operation.EMBED else self.provider
        self._meter.observe_llm(
            operation=operation.value,
            provider=provider.value,
            model=model,
            outcome=Outcome.OK if error is None else outcome_of(error),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            seconds=max(0.0, self._clock.monotonic() - started),
        )
