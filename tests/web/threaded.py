"""An operator server on an event loop of its own in a background thread, for tests that
speak to it from plain synchronous code (urllib, a browser) while it serves."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal

from vivy.errors import ConfigError
from vivy.web.server import OperatorServer

T = TypeVar("T")


class ThreadedServer(OperatorServer):
    """:class:`OperatorServer` served by :meth:`start` on an asyncio loop in a thread of its
    own until :meth:`stop`; :meth:`call` runs a coroutine on that loop (what the page reads
    must live on the loop that serves it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._thread: tuple[AbstractContextManager[BlockingPortal], BlockingPortal] | None = None
        self._served: Future[None] | None = None

    def start(self) -> None:
        """Bind, then serve on the thread's loop."""
        self.bind()
        manager = start_blocking_portal("asyncio")
        portal = manager.__enter__()
        self._thread = (manager, portal)
        self._served, _ = portal.start_task(self.serve)

    def call(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``fn`` on the server's loop and return its result."""
        if self._thread is None:
            raise ConfigError("the metrics server is not running on a thread of its own")
        return self._thread[1].call(fn)

    def stop(self) -> None:
        """Stop serving, release the port and end the thread; does nothing when stopped."""
        thread, self._thread = self._thread, None
        if thread is None:
            super().stop()
            return
        manager, portal = thread
        portal.call(super().stop)
        if self._served is not None:
            self._served.result()
            self._served = None
        manager.__exit__(None, None, None)

    def __enter__(self) -> ThreadedServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
