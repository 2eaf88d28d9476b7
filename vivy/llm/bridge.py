"""Wrappers around an LLM: a base that hands every call to one method, and the bridge that
runs an asyncio-bound LLM under trio.

:class:`WrappedLLM` delegates ``generate``, ``embed`` and ``chat`` through :meth:`_call`, so a
wrapper (the importer's call gate, :class:`RealTimeLLM`) says once what it does around a call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import ExitStack
from typing import TypeVar

import anyio
from anyio.from_thread import start_blocking_portal

from vivy.llm.port import (
    LLM,
    ChatAnswer,
    ChatRequest,
    EmbeddingTask,
    Generation,
    GenerationRequest,
    ModelTier,
)
from vivy.llm.port import T as ModelT

__all__ = ["THREAD_LIMIT", "RealTimeLLM", "WrappedLLM"]

T = TypeVar("T")

#: Most worker threads :class:`RealTimeLLM` keeps waiting on its loop (calls in flight).
THREAD_LIMIT = 256


class WrappedLLM:
    """An LLM that passes every call to ``inner`` through :meth:`_call`."""

    def __init__(self, inner: LLM) -> None:
        self._inner = inner
        self.dimension = inner.dimension
        self.embedding_model = inner.embedding_model
        self.quality = inner.quality

    async def _call(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run one call of the inner LLM; wrappers add what they do around it."""
        return await fn()

    def model_for(self, tier: ModelTier) -> str:
        """The inner LLM's model for ``tier``."""
        return self._inner.model_for(tier)

    async def generate(self, request: GenerationRequest[ModelT]) -> Generation[ModelT]:
        """The inner generation, through :meth:`_call`."""
        return await self._call(lambda: self._inner.generate(request))

    async def embed(self, texts: Sequence[str], task: EmbeddingTask) -> list[list[float]]:
        """The inner embeddings, through :meth:`_call`."""
        return await self._call(lambda: self._inner.embed(texts, task))

    async def chat(self, request: ChatRequest) -> ChatAnswer:
        """The inner chat answer, through :meth:`_call`."""
        return await self._call(lambda: self._inner.chat(request))

    async def aclose(self) -> None:
        """Close the inner LLM."""
        await self._inner.aclose()


class RealTimeLLM(WrappedLLM):
    """Runs another LLM on a private event loop in a worker thread, on real time.

    Under trio's ``MockClock`` a task waiting on the network counts as blocked, so virtual
    time would jump past a network client's time-outs and retry sleeps (python-trio/trio#456).
    Here those waits happen on the private loop's real clock, while the importer's timers stay
    virtual. ``factory`` builds the inner LLM on that loop (its HTTP client binds there);
    ``backend`` names the loop's kind (``"asyncio"`` or ``"trio"``), through anyio's
    blocking portal.
    """

    def __init__(self, factory: Callable[[], LLM], *, backend: str = "asyncio") -> None:
        self._stack = ExitStack()
        self._portal = self._stack.enter_context(start_blocking_portal(backend))
        #: Worker threads waiting on the private loop, made in the event loop on first use
        #: (anyio's default of 40 would cap a larger import concurrency).
        self._threads: anyio.CapacityLimiter | None = None
        self._closed = False

        async def build() -> LLM:
            return factory()

        try:
            inner = self._portal.call(build)
        except BaseException:
            self._stack.close()
            raise
        super().__init__(inner)

    async def _call(self, fn: Callable[[], Awaitable[T]]) -> T:
        """``fn`` run on the private loop, awaited from a worker thread."""

        async def run() -> T:
            return await fn()

        if self._threads is None:
            self._threads = anyio.CapacityLimiter(THREAD_LIMIT)
        return await anyio.to_thread.run_sync(self._portal.call, run, limiter=self._threads)

    async def aclose(self) -> None:
        """Close the inner LLM and stop the private loop."""
        if not self._closed:
            self._closed = True
            try:
                await self._call(self._inner.aclose)
            finally:
                # From a worker thread: a trio portal refuses calls from a trio loop's thread.
                await anyio.to_thread.run_sync(self._stack.close)
