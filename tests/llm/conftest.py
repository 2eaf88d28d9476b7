"""Fixtures for the LLM tests: both anyio backends and a running fake Gemini server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from vivy_lab.fakes.gemini import FakeGemini


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
