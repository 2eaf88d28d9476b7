"""Tests for vivy.web.server: /metrics, the operator API, its access rules and limits."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from email.message import Message
from typing import Any

import anyio
import anyio.to_thread
import pytest
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from tests.web.threaded import ThreadedServer as MetricsServer
from vivy.errors import ConfigError
from vivy.metrics import IngestOutcome, Metrics
from vivy.web.asgi import MAX_IN_FLIGHT
from vivy.web.server import TIMEOUT_S, OperatorServer

TOKEN = "s3cret-token"


class FakeOperatorAPI:
    """A scripted OperatorAPI that records its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        #: The threads the calls ran on.
        self.threads: list[threading.Thread] = []
        self.fail = False

    async def search(self, guild_id: int, q: str, limit: int) -> list[dict[str, Any]]:
        """Return one hit echoing the arguments."""
        self.calls.append(("search", guild_id, q, limit))
        self.threads.append(threading.current_thread())
        if self.fail:
            raise RuntimeError("database on fire")
        return [{"note_id": 7, "title": f"about {q}", "guild_id": guild_id}]

    async def profile(self, guild_id: int, user_id: int) -> dict[str, Any] | None:
        """Return a profile for user 42 only."""
        self.calls.append(("profile", guild_id, user_id))
        if user_id != 42:
            return None
        return {"user_id": user_id, "facts": [{"text": "likes tea", "source_note": 7}]}


def _get(url: str, *, token: str | None = None) -> tuple[int, Message, bytes]:
    """GET ``url``; return status, headers and body, also for HTTP errors."""
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.headers, error.read()


@pytest.fixture
def metrics() -> Metrics:
    """A Metrics on a fresh registry."""
    return Metrics(CollectorRegistry())


@pytest.fixture
def api() -> FakeOperatorAPI:
    """A fresh fake operator API."""
    return FakeOperatorAPI()


@pytest.fixture
def server(metrics: Metrics, api: FakeOperatorAPI) -> Iterator[MetricsServer]:
    """A running server on an ephemeral loopback port, without a token."""
    with MetricsServer(metrics.registry, api, port=0) as running:
        yield running


@pytest.fixture
def guarded(metrics: Metrics, api: FakeOperatorAPI) -> Iterator[MetricsServer]:
    """A running server on an ephemeral loopback port that requires a bearer token."""
    with MetricsServer(metrics.registry, api, port=0, bearer_token=TOKEN) as running:
        yield running


def test_defaults_are_loopback_9464(metrics: Metrics) -> None:
    """An unstarted server defaults to 127.0.0.1:9464."""
    server = MetricsServer(metrics.registry)
    assert (server.host, server.port, server.running) == ("127.0.0.1", 9464, False)


def test_metrics_served_on_ephemeral_port(server: MetricsServer, metrics: Metrics) -> None:
    """GET /metrics returns the injected registry's exposition on the bound port."""
    metrics.messages_ingested.labels(IngestOutcome.STORED).inc(5)
    assert server.port != 0
    status, headers, body = _get(f"{server.url}/metrics")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain")
    assert 'vivy_messages_ingested_total{outcome="stored"} 5.0' in body.decode()


def test_metrics_negotiates_openmetrics(server: MetricsServer) -> None:
    """A scraper asking for OpenMetrics gets it."""
    request = urllib.request.Request(
        f"{server.url}/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.headers["Content-Type"].startswith("application/openmetrics-text")
        assert response.read().decode().rstrip().endswith("# EOF")


def test_search_calls_api_and_returns_json(server: MetricsServer, api: FakeOperatorAPI) -> None:
    """The search route passes parsed parameters to the API and returns its hits as JSON."""
    status, headers, body = _get(f"{server.url}/api/memory/search?q=tea+time&guild_id=99&limit=5")
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body) == {
        "results": [{"note_id": 7, "title": "about tea time", "guild_id": 99}]
    }
    assert api.calls == [("search", 99, "tea time", 5)]


def test_the_api_is_awaited_on_the_servers_loop(
    server: MetricsServer, api: FakeOperatorAPI
) -> None:
    """The search route awaits the API on the event loop that serves it (the one
    :meth:`~MetricsServer.call` runs on), not on a worker thread."""

    async def here() -> threading.Thread:
        return threading.current_thread()

    assert _get(f"{server.url}/api/memory/search?q=tea&guild_id=99")[0] == 200
    serving = server.call(here)
    assert api.threads == [serving] and serving is not threading.current_thread()


def test_call_runs_on_the_servers_loop_and_raises_what_it_raises(metrics: Metrics) -> None:
    """:meth:`~MetricsServer.call` needs a started server, returns what the coroutine returns
    on the server's own thread, and raises what it raises."""

    async def here() -> threading.Thread:
        return threading.current_thread()

    async def fail() -> None:
        raise LookupError("no such note")

    server = MetricsServer(metrics.registry, port=0)
    with pytest.raises(ConfigError, match="not running"):
        server.call(here)
    with server:
        first, second = server.call(here), server.call(here)
        assert first is second and first is not threading.current_thread()
        with pytest.raises(LookupError, match="no such note"):
            server.call(fail)
        assert _get(f"{server.url}/metrics")[0] == 200
    assert not first.is_alive()


def test_search_limit_defaults_to_ten(server: MetricsServer, api: FakeOperatorAPI) -> None:
    """Without a limit the search asks for ten hits."""
    status, _, _ = _get(f"{server.url}/api/memory/search?q=tea&guild_id=99")
    assert status == 200
    assert api.calls == [("search", 99, "tea", 10)]


def test_profile_calls_api_and_returns_json(server: MetricsServer, api: FakeOperatorAPI) -> None:
    """The profile route returns the API's profile as JSON."""
    status, _, body = _get(f"{server.url}/api/memory/profile?guild_id=99&user_id=42")
    assert status == 200
    assert json.loads(body)["profile"]["facts"] == [{"text": "likes tea", "source_note": 7}]
    assert api.calls == [("profile", 99, 42)]


def test_missing_profile_is_404(server: MetricsServer) -> None:
    """A user without a profile gives 404 with a JSON error."""
    status, _, body = _get(f"{server.url}/api/memory/profile?guild_id=99&user_id=43")
    assert status == 404
    assert "no profile" in json.loads(body)["error"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("/api/memory/search?guild_id=1", "missing parameter 'q'"),
        ("/api/memory/search?q=tea", "missing parameter 'guild_id'"),
        ("/api/memory/search?q=%20&guild_id=1", "blank"),
        ("/api/memory/search?q=tea&guild_id=abc", "positive integer"),
        ("/api/memory/search?q=tea&guild_id=-5", "positive integer"),
        ("/api/memory/search?q=tea&guild_id=99999999999999999999999999", "positive integer"),
        ("/api/memory/profile?guild_id=1&user_id=9223372036854775808", "positive integer"),
        ("/api/memory/search?q=tea&guild_id=1&limit=0", "limit"),
        ("/api/memory/search?q=tea&guild_id=1&limit=51", "limit"),
        ("/api/memory/search?q=tea&guild_id=1&limit=ten", "limit"),
        ("/api/memory/search?q=tea&guild_id=1&guild_id=2", "more than once"),
        ("/api/memory/profile?guild_id=1", "missing parameter 'user_id'"),
        ("/api/memory/profile?guild_id=1&user_id=1.5", "positive integer"),
    ],
)
def test_bad_parameters_are_400(
    server: MetricsServer, api: FakeOperatorAPI, query: str, message: str
) -> None:
    """Missing or invalid parameters give 400 with a JSON error and never reach the API."""
    status, headers, body = _get(f"{server.url}{query}")
    assert status == 400
    assert headers["Content-Type"] == "application/json"
    assert message in json.loads(body)["error"]
    assert api.calls == []


def test_unknown_path_is_404(server: MetricsServer) -> None:
    """An unknown path gives 404 with a JSON error."""
    status, _, body = _get(f"{server.url}/api/memory/everything")
    assert status == 404
    assert json.loads(body) == {"error": "no route for /api/memory/everything"}


def test_post_is_refused(server: MetricsServer) -> None:
    """The server is read-only: POST gives 405."""
    request = urllib.request.Request(f"{server.url}/api/memory/search", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    with caught.value as error:
        assert error.code == 405
        assert error.headers["Allow"] == "GET"


def test_api_failure_is_500_without_details(server: MetricsServer, api: FakeOperatorAPI) -> None:
    """An exception in the API becomes a 500 that does not leak its message."""
    api.fail = True
    status, _, body = _get(f"{server.url}/api/memory/search?q=tea&guild_id=1")
    assert status == 500
    assert json.loads(body) == {"error": "internal error"}


def test_api_without_backend_is_503_until_vivy_has_started(metrics: Metrics) -> None:
    """Before the app serves the API (opening the database, waiting for shard leases) the API
    routes answer 503 saying so, with a Retry-After, while /metrics works."""
    with MetricsServer(metrics.registry, port=0) as server:
        status, headers, body = _get(f"{server.url}/api/memory/search?q=a&guild_id=1")
        assert status == 503
        assert "starting" in json.loads(body)["error"]
        assert int(headers["Retry-After"]) > 0
        assert _get(f"{server.url}/metrics")[0] == 200


@pytest.mark.parametrize("method", ["HEAD", "OPTIONS", "BREW"])
def test_other_methods_are_refused_like_post(server: MetricsServer, method: str) -> None:
    """HEAD, OPTIONS and unknown methods get 405 with ``Allow: GET``, as POST does; HEAD
    without a body."""
    request = f"{method} /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    code, fields, body = _raw(server, request.encode())
    assert code == 405
    assert fields["allow"] == "GET"
    assert (body == b"") == (method == "HEAD")


def test_token_required_for_api(guarded: MetricsServer, api: FakeOperatorAPI) -> None:
    """With a token, /api without the right bearer token gives 401 and never reaches the API."""
    url = f"{guarded.url}/api/memory/profile?guild_id=1&user_id=42"
    status, headers, body = _get(url)
    assert status == 401
    assert headers["WWW-Authenticate"].startswith("Bearer")
    assert "bearer token" in json.loads(body)["error"]
    assert _get(url, token="wrong")[0] == 401
    assert api.calls == []
    assert _get(url, token=TOKEN)[0] == 200
    assert api.calls == [("profile", 1, 42)]


def test_metrics_open_with_token(guarded: MetricsServer) -> None:
    """With a token, /metrics still needs no authorisation."""
    assert _get(f"{guarded.url}/metrics")[0] == 200


def test_refuses_non_loopback_without_token(metrics: Metrics) -> None:
    """Starting on 0.0.0.0 without a token raises ConfigError and binds nothing."""
    server = MetricsServer(metrics.registry, host="0.0.0.0", port=0)
    with pytest.raises(ConfigError, match="bearer token"):
        server.start()
    assert not server.running


def test_accepts_non_loopback_with_token(metrics: Metrics) -> None:
    """Starting on 0.0.0.0 with a token serves, and the API demands the token."""
    with MetricsServer(metrics.registry, host="0.0.0.0", port=0, bearer_token=TOKEN) as server:
        base = f"http://127.0.0.1:{server.port}"
        assert _get(f"{base}/metrics")[0] == 200
        assert _get(f"{base}/api/memory/profile?guild_id=1&user_id=42")[0] == 401


def test_empty_token_is_a_config_error(metrics: Metrics) -> None:
    """A blank bearer token is refused rather than treated as no token."""
    with pytest.raises(ConfigError, match="empty"):
        MetricsServer(metrics.registry, bearer_token="  ")


def test_port_in_use_is_a_config_error(metrics: Metrics) -> None:
    """A port that cannot be bound raises ConfigError naming the address."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"127.0.0.1:{port}"):
            MetricsServer(metrics.registry, port=port).start()


def test_stop_releases_port_and_is_idempotent(metrics: Metrics) -> None:
    """After stop() the port is free again and a second stop() does nothing."""
    server = MetricsServer(metrics.registry, port=0)
    server.start()
    port = server.port
    server.stop()
    server.stop()
    assert not server.running
    with socket.socket() as again:
        again.bind(("127.0.0.1", port))


@pytest.mark.anyio
async def test_stop_ends_serving_on_its_loop_and_frees_the_port(metrics: Metrics) -> None:
    """``stop()`` on the serving loop ends :meth:`~OperatorServer.serve` (no cancelling
    needed) and frees the port; on a bound server that never served it releases the port."""
    bound = OperatorServer(metrics.registry, port=0)
    bound.bind()
    assert bound.running
    bound.stop()
    assert not bound.running
    server = OperatorServer(metrics.registry, port=0)
    async with anyio.create_task_group() as tg:
        await tg.start(server.serve)
        assert server.running
        server.stop()
    assert not server.running
    for port in (bound.port, server.port):
        with socket.socket() as again:
            again.bind(("127.0.0.1", port))


def test_ipv6_loopback(metrics: Metrics) -> None:
    """::1 counts as loopback: it is served without a token."""
    server = MetricsServer(metrics.registry, host="::1", port=0)
    try:
        server.start()
    except ConfigError as error:
        pytest.skip(f"cannot bind ::1 here: {error}")
    try:
        assert server.url == f"http://[::1]:{server.port}"
        assert _get(f"{server.url}/metrics")[0] == 200
    finally:
        server.stop()


def test_double_start_raises(server: MetricsServer) -> None:
    """Starting a running server raises ConfigError."""
    with pytest.raises(ConfigError, match="already running"):
        server.start()


def _raw(server: MetricsServer, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` as raw bytes; the status, header fields (by lower-case name) and body
    of the answer."""
    with socket.create_connection((server.host, server.port), timeout=5) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines[1:])}
    return int(lines[0].split()[1]), fields, body


def test_a_long_target_is_414_in_json(server: MetricsServer) -> None:
    """A request target over 8 KiB gets 414 with a JSON error."""
    request = b"GET /metrics?" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    code, fields, body = _raw(server, request)
    assert code == 414
    assert fields["content-type"] == "application/json"
    assert "longer than" in json.loads(body)["error"]


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\nX-Big: " + b"b" * 70000 + b"\r\n\r\n",
    ],
)
def test_a_head_over_64_kib_is_400_and_closed(server: MetricsServer, request_bytes: bytes) -> None:
    """A request line or header over 64 KiB is refused (h11 answers 400) and the connection
    closed, before any of it reaches a route."""
    code, fields, _ = _raw(server, request_bytes)
    assert code == 400
    assert fields["connection"] == "close"


async def _closed_at(stream: anyio.abc.ByteStream) -> float:
    """Read ``stream`` to its end (the server closing it); the virtual time it ended."""
    with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
        while True:
            await stream.receive()
    return anyio.current_time()


@pytest.mark.anyio
async def test_a_request_head_must_arrive_within_the_time_out(metrics: Metrics) -> None:
    """A client that trickles half a request head is dropped the time-out after it connected,
    however recently it sent a byte (virtual time: the server's own timers decide)."""
    server = MetricsServer(metrics.registry, port=0)
    async with anyio.create_task_group() as tg:
        await tg.start(server.serve)
        async with await anyio.connect_tcp(server.host, server.port) as conn:
            opened = anyio.current_time()
            await conn.send(b"GET /metrics HTTP/1.1\r\n")
            await anyio.sleep(TIMEOUT_S - 1)
            await conn.send(b"Host: x\r\n")
            assert await _closed_at(conn) == opened + TIMEOUT_S
        tg.cancel_scope.cancel()


@pytest.mark.anyio
async def test_an_idle_connection_is_closed_after_the_time_out(metrics: Metrics) -> None:
    """A kept-alive connection that sends nothing after its answer is closed the time-out
    after the answer, and one that asks again in time is served."""
    server = MetricsServer(metrics.registry, port=0)
    request = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
    async with anyio.create_task_group() as tg:
        await tg.start(server.serve)
        async with await anyio.connect_tcp(server.host, server.port) as conn:
            for _ in range(2):
                await conn.send(request)
                answer = b""
                while not answer.endswith(b"\r\n0\r\n\r\n"):  # the last chunk
                    answer += await conn.receive()
                assert answer.startswith(b"HTTP/1.1 200")
                answered = anyio.current_time()
                await anyio.sleep(TIMEOUT_S - 1)
            assert await _closed_at(conn) == answered + TIMEOUT_S
        tg.cancel_scope.cancel()


class _HeldMemory:
    """A memory whose guild list waits until released; ``full`` is set once ``readers``
    requests wait in it."""

    def __init__(self, readers: int) -> None:
        self._readers = readers
        self.full = anyio.Event()
        self.release = anyio.Event()

    async def guild_ids(self) -> list[int]:
        """No guild, once released."""
        self._readers -= 1
        if self._readers == 0:
            self.full.set()
        await self.release.wait()
        return []

    async def guild_names(self) -> dict[int, str]:
        """No names (no guild is shown)."""
        return {}


@pytest.mark.anyio
async def test_requests_beyond_the_cap_are_refused_at_once(metrics: Metrics) -> None:
    """While MAX_IN_FLIGHT requests are being served, one more gets 503 with Retry-After at
    once, /metrics included; the held ones are then answered."""
    server = MetricsServer(metrics.registry, port=0, bearer_token=TOKEN)
    memory = _HeldMemory(MAX_IN_FLIGHT)
    server.serve_page(memory)  # type: ignore[arg-type]
    request = f"GET /page/guilds HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
    held: list[anyio.abc.SocketStream] = []
    async with anyio.create_task_group() as tg:
        await tg.start(server.serve)
        for _ in range(MAX_IN_FLIGHT):
            conn = await anyio.connect_tcp(server.host, server.port)
            await conn.send(request.encode())
            held.append(conn)
        await memory.full.wait()
        async with await anyio.connect_tcp(server.host, server.port) as extra:
            await extra.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = b""
            with contextlib.suppress(anyio.EndOfStream):
                while True:
                    answer += await extra.receive()
        head = answer.split(b"\r\n\r\n", 1)[0].lower()
        assert head.startswith(b"http/1.1 503") and b"retry-after: 1" in head
        memory.release.set()
        for conn in held:
            async with conn:
                assert (await conn.receive()).startswith(b"HTTP/1.1 200")
        tg.cancel_scope.cancel()


@pytest.mark.anyio
async def test_a_client_silent_mid_body_is_dropped_after_the_time_out(metrics: Metrics) -> None:
    """A correction whose body stops coming is dropped the time-out after its last byte (a
    byte in time keeps it), without reaching the memory or logging an error."""
    server = MetricsServer(metrics.registry, port=0, bearer_token=TOKEN)
    server.serve_page(_HeldMemory(1))  # type: ignore[arg-type]
    head = (
        f"POST /page/g/1/fact/1/remove HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 20\r\n\r\n"
    )
    with capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            await tg.start(server.serve)
            async with await anyio.connect_tcp(server.host, server.port) as conn:
                await conn.send(head.encode() + b"user_")
                await anyio.sleep(TIMEOUT_S - 1)
                await conn.send(b"i")
                sent = anyio.current_time()
                assert await _closed_at(conn) == sent + TIMEOUT_S
            tg.cancel_scope.cancel()
    assert [e for e in logs if e["log_level"] == "error"] == []


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_serves_under_either_event_loop(metrics: Metrics, anyio_backend: str) -> None:
    """:meth:`OperatorServer.serve` runs in the caller's event loop, asyncio or trio."""
    server = MetricsServer(metrics.registry, port=0)
    server.bind()
    async with anyio.create_task_group() as tg:
        await tg.start(server.serve)
        status, _, _ = await anyio.to_thread.run_sync(_get, f"{server.url}/metrics")
        assert status == 200
        tg.cancel_scope.cancel()
