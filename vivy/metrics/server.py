"""HTTP endpoint for Prometheus scrapes and the read-only operator memory API.

One small threaded HTTP server serves, on one port:

* ``GET /metrics``: the exposition of the injected ``CollectorRegistry`` (always open);
* ``GET /api/memory/search?q=&guild_id=&limit=``: memory search for operators;
* ``GET /api/memory/profile?guild_id=&user_id=``: one member's profile.

The server runs on its own daemon thread, so it works the same under asyncio (production) and
trio (tests) and keeps answering scrapes while the event loop is busy. It holds no database
code: the API's data comes from an injected :class:`OperatorAPI`, called on the server's
request threads. It listens on loopback by default; listening anywhere else requires a bearer
token, which then guards ``/api/...``.
"""

from __future__ import annotations

import gzip
import hmac
import json
import socket
import threading
from collections.abc import Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

import structlog
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, gzip_accepted

from vivy.config import is_loopback
from vivy.errors import ConfigError

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "DEFAULT_SEARCH_LIMIT",
    "MAX_ID",
    "MAX_SEARCH_LIMIT",
    "MetricsServer",
    "OperatorAPI",
]

#: Loopback: the operator API exposes member data and must not be reachable by default.
DEFAULT_HOST = "127.0.0.1"
#: The port registered for Vivy's exporter (ops/prometheus/prometheus.yml scrapes it).
DEFAULT_PORT = 9464
#: Largest ``limit`` the search route accepts.
MAX_SEARCH_LIMIT = 50
#: Largest id the API accepts: Discord snowflakes are unsigned 64-bit, SQLite's integers signed.
MAX_ID = 2**63 - 1
#: ``limit`` used when the search request gives none.
DEFAULT_SEARCH_LIMIT = 10
#: What the API routes answer (503) before the app serves them.
NOT_READY = (
    "Vivy is starting (opening its database and, on PostgreSQL, waiting for its shard leases); "
    "the operator API answers once it runs"
)
#: Seconds a client is asked to wait before trying again while Vivy is starting.
RETRY_AFTER_S = 5

_log = structlog.get_logger(__name__)


class OperatorAPI(Protocol):
    """Data behind the operator routes; called from the server's request threads.

    Implementations must be thread-safe and return JSON-serialisable values.
    """

    def search(self, guild_id: int, q: str, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` memory hits for ``q`` in guild ``guild_id``, best first."""
        ...

    def profile(self, guild_id: int, user_id: int) -> dict[str, Any] | None:
        """The profile of ``user_id`` in guild ``guild_id``, or ``None`` if there is none."""
        ...


class _BadRequest(Exception):
    """A query parameter is missing or invalid; becomes a 400 response."""


class _Server(ThreadingHTTPServer):
    """The stdlib threaded server, carrying what the handler needs."""

    daemon_threads = True
    block_on_close = False

    def __init__(
        self,
        address: tuple[str, int],
        registry: CollectorRegistry,
        api: OperatorAPI | None,
        token: str | None,
    ) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.registry = registry
        self.api = api
        self.token = token
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    """Routes one request; every API answer, error or not, is JSON."""

    server: _Server
    server_version = "vivy-metrics"
    #: Seconds a client may stay idle before its request thread gives up.
    timeout = 10

    def do_GET(self) -> None:
        """Dispatch on the path."""
        url = urlsplit(self.path)
        if url.path == "/metrics":
            self._send_metrics()
            return
        if url.path not in ("/api/memory/search", "/api/memory/profile"):
            self._send_json(HTTPStatus.NOT_FOUND, {"error": f"no route for {url.path}"})
            return
        if not self._authorised():
            self._send_json(
                HTTPStatus.UNAUTHORIZED,
                {"error": "missing or wrong bearer token"},
                headers={"WWW-Authenticate": 'Bearer realm="vivy"'},
            )
            return
        api = self.server.api
        if api is None:
            self._send_json(
                HTTPStatus.SERVICE_UNAVAILABLE,
                {"error": NOT_READY},
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
            return
        try:
            params = _parse_query(url.query)
            if url.path == "/api/memory/search":
                guild_id = _positive_int(params, "guild_id")
                q = _required(params, "q").strip()
                if not q:
                    raise _BadRequest("parameter 'q' must not be blank")
                limit = _limit(params)
                body: dict[str, Any] = {"results": api.search(guild_id, q, limit)}
            else:
                guild_id = _positive_int(params, "guild_id")
                user_id = _positive_int(params, "user_id")
                found = api.profile(guild_id, user_id)
                if found is None:
                    self._send_json(
                        HTTPStatus.NOT_FOUND, {"error": "no profile for this user in this guild"}
                    )
                    return
                body = {"profile": found}
        except _BadRequest as exc:
            self._send_json(HTTPStatus.BAD_REQUEST, {"error": str(exc)})
            return
        except Exception:
            _log.exception("operator_api_failed", path=url.path)
            self._send_json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": "internal error"})
            return
        self._send_json(HTTPStatus.OK, body)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's own error answers (400, 414, 431, 501, ...) as JSON too."""
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            phrase = "error"
        self.log_error("code %d, message %s", code, message)
        payload = json.dumps({"error": message or phrase}, ensure_ascii=False).encode()
        self.send_response(code, message)
        self.send_header("Connection", "close")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD" and code >= HTTPStatus.OK and code not in (204, 304):
            self.wfile.write(payload)

    def _refuse_method(self) -> None:
        """Every route is read-only."""
        self._send_json(
            HTTPStatus.METHOD_NOT_ALLOWED,
            {"error": "only GET is allowed"},
            headers={"Allow": "GET"},
        )

    do_HEAD = do_OPTIONS = do_POST = do_PUT = do_PATCH = do_DELETE = _refuse_method

    def _authorised(self) -> bool:
        """True when no token is configured or the request carries it."""
        token = self.server.token
        if token is None:
            return True
        header = self.headers.get("Authorization", "")
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(credentials.strip().encode(), token.encode())

    def _send_metrics(self) -> None:
        """The registry's exposition, in the format and encoding the scraper asked for."""
        encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
        output = encoder(self.server.registry)
        headers = {"Content-Type": content_type}
        if gzip_accepted(self.headers.get("Accept-Encoding", "")):
            output = gzip.compress(output)
            headers["Content-Encoding"] = "gzip"
        self._send(HTTPStatus.OK, output, headers)

    def _send_json(
        self,
        status: HTTPStatus,
        body: Mapping[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """``body`` as UTF-8 JSON (values JSON cannot hold, such as datetimes, as text)."""
        payload = json.dumps(body, default=str, ensure_ascii=False).encode()
        self._send(status, payload, {"Content-Type": "application/json", **(headers or {})})

    def _send(self, status: HTTPStatus, payload: bytes, headers: Mapping[str, str]) -> None:
        """Write one complete response."""
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Route the stdlib access log to structlog at debug level instead of stderr."""
        _log.debug("metrics_http_request", client=self.client_address[0], line=format % args)


def _parse_query(query: str) -> dict[str, str]:
    """The query parameters, each given at most once."""
    parsed = parse_qs(query, keep_blank_values=True)
    repeated = sorted(name for name, values in parsed.items() if len(values) > 1)
    if repeated:
        raise _BadRequest(f"parameter {repeated[0]!r} is given more than once")
    return {name: values[0] for name, values in parsed.items()}


def _required(params: Mapping[str, str], name: str) -> str:
    """The value of a required parameter."""
    try:
        return params[name]
    except KeyError:
        raise _BadRequest(f"missing parameter {name!r}") from None


def _positive_int(params: Mapping[str, str], name: str) -> int:
    """A required parameter holding a Discord id: a decimal integer from 1 to 2**63 - 1."""
    text = _required(params, name)
    if not (text.isascii() and text.isdigit()) or not 0 < int(text) <= MAX_ID:
        raise _BadRequest(
            f"parameter {name!r} must be a positive integer up to {MAX_ID} (a Discord id), "
            f"got {text!r}"
        )
    return int(text)


def _limit(params: Mapping[str, str]) -> int:
    """The ``limit`` parameter: 1 to :data:`MAX_SEARCH_LIMIT`, default 10."""
    if "limit" not in params:
        return DEFAULT_SEARCH_LIMIT
    text = params["limit"]
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_SEARCH_LIMIT:
        raise _BadRequest(
            f"parameter 'limit' must be an integer from 1 to {MAX_SEARCH_LIMIT}, got {text!r}"
        )
    return int(text)


class MetricsServer:
    """Serves ``/metrics`` and the operator API on a daemon thread.

    ``port=0`` picks a free port; :attr:`port` gives the bound one once started. Start it
    with :meth:`start` and :meth:`stop`, or as a context manager. Until an ``api`` is given
    (here or by :meth:`serve_api`) the ``/api/...`` routes answer 503: Vivy is starting.
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        api: OperatorAPI | None = None,
        *,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        bearer_token: str | None = None,
    ) -> None:
        if not 0 <= port <= 65535:
            raise ConfigError(f"metrics port must be from 0 to 65535, got {port}")
        if bearer_token is not None and not bearer_token.strip():
            raise ConfigError("the metrics bearer token must not be empty; leave it unset")
        self._registry = registry
        self._api = api
        self._host = host
        self._port = port
        self._token = bearer_token
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def host(self) -> str:
        """The address the server listens on."""
        return self._host

    @property
    def port(self) -> int:
        """The bound port once started (the configured one before)."""
        return self._port

    @property
    def url(self) -> str:
        """Base URL of the server, for example ``http://127.0.0.1:9464``."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self._port}"

    @property
    def running(self) -> bool:
        """Whether the server is serving."""
        return self._server is not None

    def serve_api(self, api: OperatorAPI) -> None:
        """Serve the operator API from ``api`` from now on (503 before, while Vivy starts)."""
        self._api = api
        if self._server is not None:
            self._server.api = api

    def start(self) -> None:
        """Bind and start serving on a daemon thread.

        Raises :class:`~vivy.errors.ConfigError` when the host is not loopback and no bearer
        token is configured, when the server is already running, or when the address cannot
        be bound (port in use, unknown address).
        """
        if self._server is not None:
            raise ConfigError("the metrics server is already running")
        if self._token is None and not is_loopback(self._host):
            raise ConfigError(
                f"refusing to serve metrics and the operator API on non-loopback address "
                f"{self._host!r} without a bearer token: set VIVY_API_TOKEN, or listen on "
                f"127.0.0.1"
            )
        try:
            server = _Server((self._host, self._port), self._registry, self._api, self._token)
        except OSError as exc:
            raise ConfigError(
                f"cannot listen for /metrics and the operator API on {self._host}:{self._port} "
                f"({exc.strerror or exc}); stop what uses it, or choose another "
                "VIVY_METRICS_HOST / VIVY_METRICS_PORT"
            ) from exc
        self._port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=f"vivy-metrics-{self._port}",
            daemon=True,
        )
        self._thread.start()
        _log.debug("metrics_server_started", host=self._host, port=self._port)

    def stop(self) -> None:
        """Stop serving and release the port; does nothing when not running."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._server = self._thread = None
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join()
        _log.debug("metrics_server_stopped", host=self._host, port=self._port)

    def __enter__(self) -> MetricsServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
