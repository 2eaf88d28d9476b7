"""Fixtures for the LLM tests: both anyio backends, running fake Gemini and OpenAI servers,
and the note request the OpenAI-compatible tests send."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from vivy.llm.openai_compat import OpenAIConfig, OpenAILLM
from vivy.llm.retry import Backoff
from vivy.llm.schemas import NoteInput, TranscriptLine
from vivy.llm.structured import StructuredModes
from vivy_lab.fakes.gemini import FakeGemini
from vivy_lab.fakes.openai import FakeOpenAI


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run every async test of this package on asyncio and on trio."""
    return str(request.param)


@pytest.fixture
def fake_gemini() -> Iterator[FakeGemini]:
    """A fake Gemini server on an ephemeral 127.0.0.1 port, stopped after the test."""
    server = FakeGemini().start()
    try:
        yield server
    finally:
        server.stop()


NOTE: dict[str, Any] = {
    "title": "Elden Ring co-op night",
    "summary": "Alex and Sam planned an Elden Ring co-op session for Friday.",
    "topics": ["Elden Ring"],
    "decisions": ["Play Friday at 8"],
    "open_questions": [],
    "entities": ["Elden Ring"],
}

PAYLOAD = NoteInput(
    1,
    10,
    "gaming",
    (
        TranscriptLine(1, "Alex", "Elden Ring co-op Friday?", 1_771_869_600.0),
        TranscriptLine(2, "Sam", "Yes, let's play Friday at 8", 1_771_869_660.0),
    ),
)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    """A fake OpenAI-compatible server that enforces both structured formats."""
    with FakeOpenAI() as server:
        yield server


def openai_llm(
    server: FakeOpenAI, *, attempts: int = 3, timeout_s: float = 5.0, **changes: Any
) -> OpenAILLM:
    """An OpenAILLM pointed at ``server`` with zero backoff and modes of its own."""
    config = OpenAIConfig(
        base_url=server.base_url,
        flash_model="qwen2.5:7b",
        pro_model="qwen2.5:14b",
        embedding_model="nomic-embed-text",
        timeout_s=timeout_s,
        backoff=Backoff(base_s=0.0, cap_s=0.0, max_attempts=attempts),
        **changes,
    )
    return OpenAILLM(config, modes=StructuredModes())
