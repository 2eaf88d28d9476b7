"""A stand-in for the Gemini REST API, served on 127.0.0.1 for the real SDK.

Tests and benchmarks point google-genai at :attr:`FakeGemini.base_url` (the SDK honours
``GOOGLE_GEMINI_BASE_URL``). Each call is answered by the first of:

1. a reply scripted with :meth:`FakeGemini.script_generate` or
   :meth:`FakeGemini.script_embed` (successes, 429s, 500s, unparsable text, safety blocks,
   slow answers), in order;
2. the server's ``route``, which sees the decoded request and returns a reply or None
   (:func:`schema_route` answers every call with the smallest document its schema accepts,
   after a fixed latency: what ``vivy bench import`` runs against);
3. the defaults: deterministic, deliberately unnormalised vectors for
   ``batchEmbedContents``, and a 500 for a ``generateContent`` nobody answered.

Every request is recorded (model, generation config, task type, batch size) for tests to
assert on, and :meth:`FakeGemini.statistics` counts them, the most served at once and the
time spent serving. The answers never depend on arrival order, so a replay through a route
that does not look at it is deterministic.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias

__all__ = [
    "FakeGemini",
    "FakeStatistics",
    "RecordedRequest",
    "Reply",
    "Route",
    "answer",
    "conversation_answer",
    "embeddings",
    "error",
    "minimal_instance",
    "prompt_blocked",
    "safety_block",
    "schema_route",
    "slow",
    "text_answer",
]

_PATH = re.compile(r"^/(?P<version>[^/]+)/models/(?P<model>[^:/]+):(?P<method>\w+)$")


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted HTTP answer; ``body`` is JSON-encoded unless it is ``str``."""

    status: int = 200
    body: Any = None
    delay_s: float = 0.0


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """A request the fake server received, decoded."""

    version: str
    model: str
    method: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def text_answer(
    text: str,
    *,
    prompt_tokens: int = 11,
    output_tokens: int = 7,
    finish_reason: str = "STOP",
) -> Reply:
    """A generateContent success whose single part is ``text``."""
    return Reply(
        body={
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": text}]},
                    "finishReason": finish_reason,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": prompt_tokens,
                "candidatesTokenCount": output_tokens,
                "totalTokenCount": prompt_tokens + output_tokens,
            },
            "modelVersion": "fake",
        }
    )


def answer(obj: Any, *, prompt_tokens: int = 11, output_tokens: int = 7) -> Reply:
    """A generateContent success whose text is ``obj`` encoded as JSON."""
    return text_answer(json.dumps(obj), prompt_tokens=prompt_tokens, output_tokens=output_tokens)


def conversation_answer(
    note: dict[str, Any],
    profiles: dict[int, list[dict[str, Any]]],
    *,
    prompt_tokens: int = 11,
    output_tokens: int = 7,
) -> Reply:
    """A note call's answer: the note's fields plus each member's profile operations."""
    entries = [{"user_id": user, "operations": ops} for user, ops in profiles.items()]
    return answer(
        {**note, "profiles": entries}, prompt_tokens=prompt_tokens, output_tokens=output_tokens
    )


def safety_block() -> Reply:
    """A candidate stopped by the safety filter, with no content."""
    return Reply(
        body={
            "candidates": [{"finishReason": "SAFETY", "safetyRatings": []}],
            "usageMetadata": {"promptTokenCount": 5},
        }
    )


def prompt_blocked() -> Reply:
    """A prompt refused outright: no candidates, a block reason in promptFeedback."""
    return Reply(body={"promptFeedback": {"blockReason": "SAFETY"}})


def error(status: int, message: str = "scripted failure") -> Reply:
    """A Google-style JSON error with HTTP ``status``."""
    phrase = HTTPStatus(status).phrase.upper().replace(" ", "_")
    return Reply(
        status=status, body={"error": {"code": status, "message": message, "status": phrase}}
    )


def embeddings(vectors: list[list[float]]) -> Reply:
    """A batchEmbedContents success with the given vectors."""
    return Reply(body={"embeddings": [{"values": vector} for vector in vectors]})


def slow(reply: Reply, delay_s: float) -> Reply:
    """``reply``, sent only after ``delay_s`` seconds (released early when the server stops)."""
    return Reply(status=reply.status, body=reply.body, delay_s=delay_s)


#: Answers a request, or returns None to leave it to the server's defaults.
Route: TypeAlias = Callable[[RecordedRequest], Reply | None]


def minimal_instance(schema: dict[str, Any]) -> object:
    """The smallest value a Gemini response schema (OpenAPI subset) accepts."""
    if "anyOf" in schema:
        return minimal_instance(schema["anyOf"][0])
    kind = str(schema.get("type", "OBJECT")).upper()
    if schema.get("enum"):
        return schema["enum"][0]
    if kind == "OBJECT":
        properties: dict[str, Any] = schema.get("properties", {})
        required = schema.get("required", list(properties))
        return {name: minimal_instance(properties[name]) for name in required}
    if kind == "ARRAY":
        return [minimal_instance(schema["items"]) for _ in range(int(schema.get("minItems", 0)))]
    if kind == "STRING":
        return "bench"
    if kind in ("INTEGER", "NUMBER"):
        return int(schema.get("minimum", 0))
    if kind == "BOOLEAN":
        return False
    return None


def schema_route(latency_s: float = 0.0) -> Route:
    """A route answering every call after ``latency_s`` seconds: a generation with the
    smallest document its ``responseSchema`` accepts (required fields only; strings, empty
    arrays, first enum values), embeddings with the default vectors."""

    def route(recorded: RecordedRequest) -> Reply | None:
        if recorded.method == "generateContent":
            config = recorded.body.get("generationConfig", {})
            schema = config.get("responseSchema") or config.get("responseJsonSchema") or {}
            text = json.dumps(minimal_instance(schema)) if schema else "bench"
            reply = text_answer(text, prompt_tokens=1, output_tokens=1)
        elif recorded.method == "batchEmbedContents":
            reply = FakeGemini.default_embeddings(recorded.body)
        else:
            return None
        return slow(reply, latency_s) if latency_s else reply

    return route


@dataclass(frozen=True, slots=True)
class FakeStatistics:
    """What a :class:`FakeGemini` served.

    ``busy_s`` sums the seconds each request was being served: divided by the wall time of a
    run, the average number of calls in flight.
    """

    requests: int
    serving_max: int
    busy_s: float


def _default_vector(text: str, dimension: int) -> list[float]:
    """A deterministic, deliberately unnormalised vector for ``text``."""
    values: list[float] = []
    counter = 0
    while len(values) < dimension:
        digest = hashlib.blake2b(f"{counter}:{text}".encode(), digest_size=64).digest()
        values.extend(3.0 * (v / 2**31) for v in struct.unpack("<16i", digest))
        counter += 1
    return values[:dimension]


class FakeGemini:
    """A threaded HTTP server speaking enough of the Gemini API for the SDK.

    See the module docstring for how a call is answered; ``route`` may be replaced at any
    time (it runs on the server's handler threads).
    """

    def __init__(self, route: Route | None = None) -> None:
        self.route = route
        self._lock = threading.Lock()
        self._generate: deque[Reply] = deque()
        self._embed: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._serving = 0
        self._serving_max = 0
        self._busy_s = 0.0
        self._release = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._server.request_queue_size = 256
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        """The URL to pass as ``HttpOptions(base_url=...)`` or ``GOOGLE_GEMINI_BASE_URL``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def statistics(self) -> FakeStatistics:
        """Requests received, the most served at once, and the seconds spent serving."""
        with self._lock:
            return FakeStatistics(len(self._requests), self._serving_max, self._busy_s)

    def script_generate(self, *replies: Reply) -> None:
        """Queue replies for the next ``generateContent`` calls."""
        with self._lock:
            self._generate.extend(replies)

    def script_embed(self, *replies: Reply) -> None:
        """Queue replies for the next ``batchEmbedContents`` calls."""
        with self._lock:
            self._embed.extend(replies)

    def start(self) -> FakeGemini:
        """Serve in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Release slow replies, stop serving and close the socket."""
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeGemini:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _reply_for(self, recorded: RecordedRequest) -> Reply:
        """Record ``recorded`` and pick its reply: scripted, routed, or the default."""
        with self._lock:
            self._requests.append(recorded)
            queue = {"generateContent": self._generate, "batchEmbedContents": self._embed}
            scripted = queue.get(recorded.method)
            if scripted:
                return scripted.popleft()
            route = self.route
        reply = route(recorded) if route is not None else None
        if reply is not None:
            return reply
        if recorded.method == "generateContent":
            return error(500, "fake gemini: no scripted generateContent reply")
        if recorded.method == "batchEmbedContents":
            return self.default_embeddings(recorded.body)
        return error(404, f"fake gemini: unknown method {recorded.method}")

    def _serve(self, recorded: RecordedRequest) -> Reply | None:
        """The reply to send for ``recorded`` once its delay has passed; None when the server
        stopped during the delay. Counts the request as served meanwhile."""
        started = time.perf_counter()
        with self._lock:
            self._serving += 1
            self._serving_max = max(self._serving_max, self._serving)
        try:
            reply = self._reply_for(recorded)
            if reply.delay_s and self._release.wait(reply.delay_s):
                return None
            return reply
        finally:
            with self._lock:
                self._serving -= 1
                self._busy_s += time.perf_counter() - started

    @staticmethod
    def default_embeddings(body: dict[str, Any]) -> Reply:
        """One deterministic vector per text of a batchEmbedContents request."""
        vectors = []
        for item in body.get("requests", []):
            text = " ".join(part.get("text", "") for part in item["content"]["parts"])
            dimension = int(item.get("outputDimensionality", 3072))
            vectors.append(_default_vector(text, dimension))
        return embeddings(vectors)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        """A request handler class bound to this server's script and log."""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Keep test output quiet."""

            def do_POST(self) -> None:
                """Decode the call, record it and send the scripted reply."""
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length) if length else b"{}"
                match = _PATH.match(self.path.split("?", 1)[0])
                if match is None:
                    self._send(error(404, f"fake gemini: unknown path {self.path}"))
                    return
                recorded = RecordedRequest(
                    version=match["version"],
                    model=match["model"],
                    method=match["method"],
                    body=json.loads(raw or b"{}"),
                    headers={key.lower(): value for key, value in self.headers.items()},
                )
                reply = fake._serve(recorded)
                if reply is not None:
                    self._send(reply)

            def _send(self, reply: Reply) -> None:
                """Write ``reply`` to the client, tolerating a client that gave up."""
                if isinstance(reply.body, str):
                    payload = reply.body.encode()
                else:
                    payload = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json; charset=UTF-8")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler
