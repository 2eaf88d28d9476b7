"""The operator server: ``/metrics``, the operator API and the memory page on one port.

Hypercorn serves :func:`vivy.web.asgi.operator_app` under whichever event loop runs
:meth:`OperatorServer.serve` (asyncio in ``vivy run``, trio in tests), on a socket bound
beforehand by :meth:`OperatorServer.bind`, so a port in use or a non-loopback address without
a token stops Vivy before it starts anything. Limits: request heads over 64 KiB get 400,
targets over 8 KiB 414; a request head must arrive within 10 s of the connection or of the
previous answer, a client silent for 10 s mid-body is dropped, an idle connection closes after
10 s; at most 32 requests are served at once.
"""

from __future__ import annotations

import logging
import socket

import anyio
import sniffio
import structlog
from hypercorn.config import Config
from prometheus_client import CollectorRegistry

from vivy.config import is_loopback
from vivy.errors import ConfigError
from vivy.web.asgi import OperatorAPI, Surface, operator_app
from vivy.web.memory import MemorySource
from vivy.web.tokens import Tokens

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "MAX_HEAD_BYTES", "TIMEOUT_S", "OperatorServer"]

#: Loopback: the operator API and the page expose member data and must not be reachable
#: by default.
DEFAULT_HOST = "127.0.0.1"
#: The port registered for Vivy's exporter (ops/prometheus/prometheus.yml scrapes it).
DEFAULT_PORT = 9464
#: Largest request line and headers together; more gets 400 and the connection closes.
MAX_HEAD_BYTES = 64 * 1024
#: Seconds a request head may take to arrive (from the connection or the previous answer),
#: and that a client may stay silent mid-body, before it is dropped.
TIMEOUT_S = 10

_log = structlog.get_logger(__name__)
#: Hypercorn's own records: its errors show, its info lines (the address it runs on) only
#: repeat what Vivy logs itself once it serves.
_hypercorn_log = logging.getLogger("vivy.web.hypercorn")
_hypercorn_log.setLevel(logging.WARNING)


class OperatorServer:
    """Serves ``/metrics``, the operator API and the memory page.

    ``port=0`` picks a free port; :attr:`port` gives the bound one once bound. Until an API
    and a memory are given (here, or later by :meth:`serve_api` and :meth:`serve_page`),
    their routes answer 503: Vivy is starting.
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        api: OperatorAPI | None = None,
        *,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        bearer_token: str | None = None,
        page_tokens: str | None = None,
        guilds: frozenset[int] | None = None,
    ) -> None:
        if not 0 <= port <= 65535:
            raise ConfigError(f"metrics port must be from 0 to 65535, got {port}")
        if bearer_token is not None and not bearer_token.strip():
            raise ConfigError("the metrics bearer token must not be empty; leave it unset")
        tokens = Tokens.from_settings(bearer_token, page_tokens)
        self._surface = Surface(registry, tokens, api, None, guilds)
        self._host = host
        self._port = port
        self._socket: socket.socket | None = None
        self._stopping: anyio.Event | None = None

    @property
    def host(self) -> str:
        """The address the server listens on."""
        return self._host

    @property
    def port(self) -> int:
        """The bound port once bound (the configured one before)."""
        return self._port

    @property
    def url(self) -> str:
        """Base URL of the server, for example ``http://127.0.0.1:9464``."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self._port}"

    @property
    def running(self) -> bool:
        """Whether the server holds its port."""
        return self._socket is not None or self._stopping is not None

    def serve_api(self, api: OperatorAPI) -> None:
        """Serve the operator API from ``api`` from now on (503 before, while Vivy starts)."""
        self._surface.api = api

    def serve_page(self, memory: MemorySource) -> None:
        """Serve the memory page from ``memory`` from now on (503 before)."""
        self._surface.memory = memory

    def bind(self) -> None:
        """Take the port; raises ConfigError for a non-loopback address without a token, a
        second bind, or an address that cannot be bound."""
        if self.running:
            raise ConfigError("the metrics server is already running")
        if not self._surface.tokens.required and not is_loopback(self._host):
            raise ConfigError(
                f"refusing to serve metrics and the operator API on non-loopback address "
                f"{self._host!r} without a bearer token: set VIVY_API_TOKEN, or listen on "
                f"127.0.0.1"
            )
        family = socket.AF_INET6 if ":" in self._host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self._host, self._port))
            sock.listen(64)
        except OSError as exc:
            sock.close()
            raise ConfigError(
                f"cannot listen for /metrics and the operator API on {self._host}:{self._port} "
                f"({exc.strerror or exc}); stop what uses it, or choose another "
                "VIVY_METRICS_HOST / VIVY_METRICS_PORT"
            ) from exc
        self._port = int(sock.getsockname()[1])
        self._socket = sock

    async def serve(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve on the bound port (binding it first if needed) until cancelled or stopped;
        under asyncio or trio."""
        if self._socket is None:
            self.bind()
        sock, self._socket = self._socket, None
        assert sock is not None
        stopping = self._stopping = anyio.Event()
        config = Config()
        config.bind = [f"fd://{sock.detach()}"]
        config.h11_max_incomplete_size = MAX_HEAD_BYTES
        config.read_timeout = TIMEOUT_S
        config.keep_alive_timeout = TIMEOUT_S
        config.graceful_timeout = 1.0
        config.h2_max_concurrent_streams = 32
        config.accesslog = None
        config.errorlog = _hypercorn_log
        config.include_server_header = False
        app = operator_app(self._surface)
        _log.debug("metrics_server_started", host=self._host, port=self._port)
        task_status.started()
        try:
            if sniffio.current_async_library() == "trio":
                from hypercorn.trio import serve as serve_trio

                await serve_trio(app, config, shutdown_trigger=stopping.wait)  # type: ignore[arg-type]
            else:
                from hypercorn.asyncio import serve as serve_asyncio

                await serve_asyncio(app, config, shutdown_trigger=stopping.wait)  # type: ignore[arg-type]
        finally:
            self._stopping = None
            _log.debug("metrics_server_stopped", host=self._host, port=self._port)

    def stop(self) -> None:
        """End :meth:`serve` (called on the loop that serves), or release a port bound and not
        served; does nothing otherwise."""
        if self._stopping is not None:
            self._stopping.set()
        elif self._socket is not None:
            self._socket.close()
            self._socket = None
