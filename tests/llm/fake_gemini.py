"""A scripted stand-in for the Gemini REST API, served on 127.0.0.1 for the real SDK.

Tests point google-genai at :attr:`FakeGemini.base_url`, script the replies the server
gives (successes, 429s, 500s, unparsable text, safety blocks, slow answers) and then assert
on the requests it recorded (model, generation config, task type, batch size).
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import threading
from collections import deque
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "FakeGemini",
    "RecordedRequest",
    "Reply",
    "answer",
    "conversation_answer",
    "embeddings",
    "error",
    "prompt_blocked",
    "safety_block",
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

    Replies to ``generateContent`` come from :meth:`script_generate`; replies to
    ``batchEmbedContents`` come from :meth:`script_embed`, or default to deterministic
    unnormalised vectors of the requested dimensionality.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generate: deque[Reply] = deque()
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
        """The URL to pass as ``HttpOptions(base_url=...)``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

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

    def _reply_for(self, recorded: RecordedRequest) -> Reply:
        """Record ``recorded`` and pick its scripted (or default) reply."""
        with self._lock:
            self._requests.append(recorded)
            if recorded.method == "generateContent":
                if self._generate:
                    return self._generate.popleft()
                return error(500, "fake gemini: no scripted generateContent reply")
            if recorded.method == "batchEmbedContents":
                if self._embed:
                    return self._embed.popleft()
                return self._default_embeddings(recorded.body)
        return error(404, f"fake gemini: unknown method {recorded.method}")

    @staticmethod
    def _default_embeddings(body: dict[str, Any]) -> Reply:
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
                reply = fake._reply_for(recorded)
                if reply.delay_s and fake._release.wait(reply.delay_s):
                    return
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
