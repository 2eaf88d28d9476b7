"""MeteredLLM: every call reported with operation, model, outcome, tokens and latency."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest
from trio.testing import MockClock

from tests.hashing import HashingEmbedder
from vivy.clock import Clock
from vivy.errors import LLMError, LLMInvalidOutput, LLMUnavailable
from vivy.llm.composed import ComposedLLM
from vivy.llm.metered import CountingMeter, LLMObservation, MeteredLLM, NullMeter
from vivy.llm.offline import OFFLINE_MODEL, OfflineLLM
from vivy.llm.port import (
    ChatAnswer,
    ChatRequest,
    ChatTurn,
    EmbeddingTask,
    Generation,
    GenerationRequest,
    ModelTier,
    T,
    Usage,
)
from vivy.llm.prompts import chat_request, cluster_request, note_request
from vivy.llm.schemas import ClusterInput, NoteDraft, NoteInput, TranscriptLine

pytestmark = pytest.mark.anyio

PAYLOAD = NoteInput(1, 10, "gaming", (TranscriptLine(1, "Alex", "Elden Ring tonight?", 0.0),))


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, object]]:
    """Trio with a virtual clock, so measured latencies are exact."""
    return ("trio", {"clock": MockClock(autojump_threshold=0)})


class Scripted:
    """An LLM that takes ``delay_s`` of virtual time and then fails or answers."""

    def __init__(self, *, delay_s: float = 0.0, error: Exception | None = None) -> None:
        self.dimension = 3
        self.embedding_model = "scripted-embed"
        self.quality = "gemini"
        self.delay_s = delay_s
        self.error = error

    def model_for(self, tier: ModelTier) -> str:
        return f"scripted-{tier.value}"

    async def _work(self) -> None:
        await anyio.sleep(self.delay_s)
        if self.error is not None:
            raise self.error

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        await self._work()
        value = request.schema.model_validate(
            {"title": "t", "summary": "s", "topics": [], "decisions": []}
        )
        return Generation(value, Usage(100, 20), "scripted-flash-001", self.quality)

    async def embed(self, texts: Sequence[str], task: EmbeddingTask) -> list[list[float]]:
        await self._work()
        return [[1.0, 0.0, 0.0] for _ in texts]

    async def chat(self, request: ChatRequest) -> ChatAnswer:
        await self._work()
        return ChatAnswer("hello", Usage(50, 5), "scripted-flash-001", self.quality)

    async def aclose(self) -> None:
        await anyio.lowlevel.checkpoint()


def metered(inner: Scripted | OfflineLLM, meter: CountingMeter) -> MeteredLLM:
    """``inner`` wrapped with ``meter`` and a clock on the current event loop."""
    return MeteredLLM(inner, meter, Clock.starting_at(1_771_869_600.0))


async def test_successful_generation_is_observed_with_tokens_and_latency() -> None:
    """A generation taking 1.5 s of virtual time is reported as ok with its tokens."""
    meter = CountingMeter()
    llm = metered(Scripted(delay_s=1.5), meter)
    result = await llm.generate(note_request(PAYLOAD))
    assert isinstance(result.value, NoteDraft)
    assert meter.observations == [
        LLMObservation("note", "gemini", "scripted-flash-001", "ok", 100, 20, 1.5),
    ]


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (LLMInvalidOutput("bad json"), "invalid_output"),
        (LLMUnavailable("503"), "unavailable"),
        (LLMError("400"), "error"),
        (RuntimeError("bug"), "error"),
    ],
)
async def test_failures_are_observed_and_reraised(error: Exception, outcome: str) -> None:
    """Each failure kind maps to its outcome label and propagates unchanged."""
    meter = CountingMeter()
    llm = metered(Scripted(delay_s=0.25, error=error), meter)
    with pytest.raises(type(error)) as caught:
        await llm.generate(cluster_request(ClusterInput(1, "d", ())))
    assert caught.value is error
    assert meter.observations == [
        LLMObservation("topic_cluster", "gemini", "scripted-pro", outcome, 0, 0, 0.25),
    ]


async def test_embed_and_chat_are_observed() -> None:
    """Embeddings are metered under the embedding model, chat with its token usage."""
    meter = CountingMeter()
    llm = metered(Scripted(delay_s=0.5), meter)
    await llm.embed(["a", "b"], EmbeddingTask.DOCUMENT)
    await llm.chat(chat_request([ChatTurn("user", "Alex", "hi")]))
    assert meter.observations == [
        LLMObservation("embed", "gemini", "scripted-embed", "ok", 0, 0, 0.5),
        LLMObservation("chat", "gemini", "scripted-flash-001", "ok", 50, 5, 0.5),
    ]


async def test_composed_providers_are_labelled_each_by_its_own() -> None:
    """Around chat from one provider and embeddings from another, with no labels given, each
    call is labelled with the provider that served it."""
    meter = CountingMeter()
    llm = MeteredLLM(
        ComposedLLM(Scripted(), OfflineLLM(embedder=HashingEmbedder(dimension=64))),
        meter,
        Clock.starting_at(1_771_869_600.0),
    )
    await llm.embed(["a"], EmbeddingTask.DOCUMENT)
    await llm.chat(chat_request([ChatTurn("user", "Alex", "hi")]))
    assert [(o.operation, o.provider) for o in meter.observations] == [
        ("embed", "offline"),
        ("chat", "gemini"),
    ]


async def test_cancellation_is_not_a_failure() -> None:
    """A call cancelled by its caller is not reported as an error."""
    meter = CountingMeter()
    llm = metered(Scripted(delay_s=10.0), meter)
    with anyio.move_on_after(1.0):
        await llm.generate(note_request(PAYLOAD))
    assert meter.observations == []


async def test_wrapper_exposes_the_inner_attributes() -> None:
    """Dimension, embedding model, quality and model names pass through."""
    llm = metered(OfflineLLM(embedder=HashingEmbedder(dimension=64)), CountingMeter())
    assert (llm.dimension, llm.embedding_model, llm.quality) == (64, "test-hash", "offline")
    assert llm.model_for(ModelTier.PRO) == OFFLINE_MODEL
    await llm.aclose()


async def test_counting_meter_statistics() -> None:
    """The counting meter totals calls, tokens, seconds and outcomes."""
    meter = CountingMeter()
    good = metered(Scripted(delay_s=1.0), meter)
    bad = metered(Scripted(delay_s=2.0, error=LLMUnavailable("down")), meter)
    await good.generate(note_request(PAYLOAD))
    await good.chat(chat_request([ChatTurn("user", "Alex", "hi")]))
    with pytest.raises(LLMUnavailable):
        await bad.generate(note_request(PAYLOAD))
    stats = meter.statistics()
    assert (stats.calls, stats.input_tokens, stats.output_tokens, stats.seconds) == (
        3,
        150,
        25,
        4.0,
    )
    assert stats.outcomes == {"ok": 2, "unavailable": 1}
    assert meter.calls(operation="note") == 2
    assert meter.calls(outcome="unavailable") == 1
    by_operation = meter.by_operation()
    assert list(by_operation) == ["chat", "note"]
    note = by_operation["note"]
    assert (note.calls, note.input_tokens, note.output_tokens) == (2, 100, 20)
    assert note.outcomes == {"ok": 1, "unavailable": 1}
    assert by_operation["chat"].input_tokens == 50


def test_null_meter_accepts_observations() -> None:
    """The null meter takes the full keyword signature and does nothing."""
    NullMeter().observe_llm(
        operation="note",
        provider="gemini",
        model="m",
        outcome="ok",
        input_tokens=1,
        output_tokens=2,
        seconds=0.1,
    )
