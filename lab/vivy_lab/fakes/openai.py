"""A stand-in for an OpenAI-compatible server, served on 127.0.0.1 for the real ``openai`` SDK.

Tests point the SDK at :attr:`FakeOpenAI.base_url` (``VIVY_OPENAI_BASE_URL``). It serves
``POST /v1/chat/completions``, ``POST /v1/embeddings`` and ``GET /v1/models``, and behaves
like the servers Vivy meets: it may refuse some ``response_format`` types (``formats``) or
ignore them (``ignores_formats``), wrap JSON in prose when no format is asked for
(``prose``), report no token usage (``usage``), refuse the ``dimensions`` parameter
(``takes_dimensions``) or embed at a fixed ``dimension`` whatever is asked. Each call is
answered by the first of:

1. a reply scripted with :meth:`FakeOpenAI.script_chat` or :meth:`FakeOpenAI.script_embed`
   (successes, 429s with ``Retry-After``, 500s, invalid JSON, slow answers), in order;
2. the server's ``route``, which sees the decoded request and returns a reply or None;
3. the defaults: :mod:`vivy_lab.fakes.brain`'s answers and vectors, and the ``models`` list
   (404 without one, like a server that has no such list).

Every request is recorded for tests to assert on.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias

from vivy_lab.fakes.brain import brain_answer, brain_chat, brain_vector, is_generation

__all__ = [
    "FakeOpenAI",
    "RecordedRequest",
    "Reply",
    "Route",
    "answer",
    "embeddings",
    "error",
    "slow",
    "text_answer",
]


@dataclass(frozen=True, slots=True)
class Reply:
    """One HTTP answer; ``body`` is JSON-encoded unless it is ``str``."""

    status: int = 200
    body: Any = None
    delay_s: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """A request the fake server received, decoded."""

    method: str
    path: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def endpoint(self) -> str:
        """``chat``, ``embeddings``, ``models`` or the path."""
        return {
            "/v1/chat/completions": "chat",
            "/v1/embeddings": "embeddings",
            "/v1/models": "models",
        }.get(self.path, self.path)

    @property
    def response_format(self) -> str | None:
        """The ``response_format`` type asked for, if any."""
        asked = self.body.get("response_format")
        return str(asked.get("type")) if isinstance(asked, dict) else None

    @property
    def system(self) -> str:
        """The text of the first system message ("" without one)."""
        for message in self.body.get("messages", []):
            if message.get("role") == "system":
                return str(message.get("content") or "")
        return ""

    @property
    def prompt(self) -> str:
        """The text of the first user message ("" without one)."""
        for message in self.body.get("messages", []):
            if message.get("role") == "user":
                return str(message.get("content") or "")
        return ""


#: Answers a request, or returns None to leave it to the server's defaults.
Route: TypeAlias = Callable[[RecordedRequest], Reply | None]


def text_answer(
    text: str,
    *,
    prompt_tokens: int | None = 11,
    completion_tokens: int = 7,
    finish_reason: str = "stop",
) -> Reply:
    """A chat completion whose message is ``text`` (no ``usage`` when ``prompt_tokens`` is
    None, as some servers answer)."""
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
        ],
    }
    if prompt_tokens is not None:
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
    return Reply(body=body)


def answer(obj: Any, *, prompt_tokens: int | None = 11, completion_tokens: int = 7) -> Reply:
    """A chat completion whose message is ``obj`` encoded as JSON."""
    return text_answer(
        json.dumps(obj), prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
    )


def error(
    status: int,
    message: str = "scripted failure",
    *,
    retry_after: str | None = None,
    param: str | None = None,
) -> Reply:
    """An OpenAI-style JSON error with HTTP ``status`` (and a ``Retry-After`` header)."""
    body = {"error": {"message": message, "type": "invalid_request_error", "param": param}}
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return Reply(status=status, body=body, headers=headers)


def embeddings(vectors: Sequence[Sequence[float]]) -> Reply:
    """An embeddings success with the given vectors."""
    data = [
        {"object": "embedding", "index": i, "embedding": list(vector)}
        for i, vector in enumerate(vectors)
    ]
    return Reply(body={"object": "list", "data": data, "model": "fake"})


def slow(reply: Reply, delay_s: float) -> Reply:
    """``reply``, sent only after ``delay_s`` seconds (released early when the server stops)."""
    return Reply(reply.status, reply.body, delay_s, reply.headers)


class FakeOpenAI:
    """A threaded HTTP server speaking enough of the OpenAI API for the SDK.

    See the module docstring for the behaviours; ``route`` may be replaced at any time (it
    runs on the server's handler threads).
    """

    def __init__(
        self,
        route: Route | None = None,
        *,
        formats: frozenset[str] = frozenset({"json_schema", "json_object"}),
        ignores_formats: bool = False,
        prose: bool = False,
        usage: bool = True,
        models: Sequence[str] | None = None,
        dimension: int | None = None,
        takes_dimensions: bool = True,
    ) -> None:
        self.route = route
        self.formats = formats
        self.ignores_formats = ignores_formats
        self.prose = prose
        self.usage = usage
        self.models = models
        self.dimension = dimension
        self.takes_dimensions = takes_dimensions
        self._lock = threading.Lock()
        self._chat: deque[Reply] = deque()
        self._embed: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._release = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        """The URL to set as ``VIVY_OPENAI_BASE_URL``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def calls(self, endpoint: str) -> list[RecordedRequest]:
        """The requests received at ``endpoint`` (``chat``, ``embeddings``, ``models``)."""
        return [r for r in self.requests if r.endpoint == endpoint]

    def script_chat(self, *replies: Reply) -> None:
        """Queue replies for the next chat completion calls."""
        with self._lock:
            self._chat.extend(replies)

    def script_embed(self, *replies: Reply) -> None:
        """Queue replies for the next embeddings calls."""
        with self._lock:
            self._embed.extend(replies)

    def start(self) -> FakeOpenAI:
        """Serve in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Release slow replies, stop serving and close the socket."""
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _reply_for(self, recorded: RecordedRequest) -> Reply:
        """Record ``recorded`` and pick its reply: scripted, routed, or the default."""
        with self._lock:
            self._requests.append(recorded)
            queue = {"chat": self._chat, "embeddings": self._embed}.get(recorded.endpoint)
            if queue:
                return queue.popleft()
            route = self.route
        reply = route(recorded) if route is not None else None
        if reply is not None:
            return reply
        if recorded.endpoint == "chat":
            return self._chat_default(recorded)
        if recorded.endpoint == "embeddings":
            return self._embed_default(recorded)
        if recorded.endpoint == "models" and self.models is not None:
            data = [{"id": m, "object": "model", "owned_by": "fake"} for m in self.models]
            return Reply(body={"object": "list", "data": data})
        return error(404, f"fake openai: nothing at {recorded.method} {recorded.path}")

    def _chat_default(self, recorded: RecordedRequest) -> Reply:
        """The brain's answer, as this server's capabilities allow."""
        asked = recorded.response_format
        if asked is not None and asked not in self.formats and not self.ignores_formats:
            return error(
                400, f"response_format type {asked!r} is not supported", param="response_format"
            )
        enforced = asked is not None and asked in self.formats
        if not is_generation(recorded.system):
            text = brain_chat(recorded.system)
        else:
            text = json.dumps(brain_answer(recorded.system, recorded.prompt))
            if self.prose and not enforced:
                text = f"Here is the JSON you asked for:\n```json\n{text}\n```\nAnything else?"
        return text_answer(text, prompt_tokens=11 if self.usage else None)

    def _embed_default(self, recorded: RecordedRequest) -> Reply:
        """The brain's vectors, at the fixed or the asked dimension."""
        asked = recorded.body.get("dimensions")
        if asked is not None and not self.takes_dimensions:
            return error(400, "this model does not support matryoshka dimensions")
        dimension = self.dimension or (int(asked) if asked else 768)
        texts = recorded.body.get("input", [])
        texts = [texts] if isinstance(texts, str) else texts
        return embeddings([brain_vector(str(text), dimension) for text in texts])

    def _serve(self, recorded: RecordedRequest) -> Reply | None:
        """The reply for ``recorded`` once its delay passed; None when the server stopped."""
        reply = self._reply_for(recorded)
        if reply.delay_s and self._release.wait(reply.delay_s):
            return None
        return reply

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        """A request handler class bound to this server's script and log."""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Keep test output quiet."""

            def do_GET(self) -> None:
                """Answer ``/v1/models``."""
                self._answer("GET", {})

            def do_POST(self) -> None:
                """Decode the call, record it and send its reply."""
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length) if length else b"{}"
                self._answer("POST", json.loads(raw or b"{}"))

            def _answer(self, method: str, body: dict[str, Any]) -> None:
                recorded = RecordedRequest(
                    method=method,
                    path=self.path.split("?", 1)[0],
                    body=body,
                    headers={key.lower(): value for key, value in self.headers.items()},
                )
                reply = fake._serve(recorded)
                if reply is not None:
                    self._send(reply)

            def _send(self, reply: Reply) -> None:
                """Write ``reply`` to the client, tolerating a client that gave up."""
                payload = (
                    reply.body.encode()
                    if isinstance(reply.body, str)
                    else json.dumps(reply.body).encode()
                )
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler
