"""A loopback stand-in for the Gemini REST API with a fixed latency, for ``vivy bench import``.

It answers every ``generateContent`` with the smallest document its ``responseSchema``
accepts (required fields only; strings, empty arrays, first enum values) and every
``batchEmbedContents`` with deterministic vectors of the requested size, each after
``latency_s`` seconds of real time. The answers never depend on arrival order, so a replay
through it is deterministic. It counts requests, the most served at once and the time spent
serving.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeGemini", "minimal_instance"]

_PATH = re.compile(r"^/(?P<version>[^/]+)/models/(?P<model>[^:/]+):(?P<method>\w+)$")


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


def _vector(text: str, dimension: int) -> list[float]:
    """A deterministic vector for ``text``."""
    values: list[float] = []
    counter = 0
    while len(values) < dimension:
        digest = hashlib.blake2b(f"{counter}:{text}".encode(), digest_size=64).digest()
        values.extend(v / 2**31 for v in struct.unpack("<16i", digest))
        counter += 1
    return values[:dimension]


class FakeGemini:
    """A threaded HTTP server on 127.0.0.1; see the module docstring."""

    def __init__(self, latency_s: float = 0.0) -> None:
        self.latency_s = latency_s
        self.requests = 0
        self.serving_max = 0
        #: Seconds spent serving, summed over requests: divided by the wall time of a run,
        #: the average number of calls in flight.
        self.busy_s = 0.0
        self._serving = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._server.request_queue_size = 256
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        """The URL to set as ``GOOGLE_GEMINI_BASE_URL``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/"

    def __enter__(self) -> FakeGemini:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def answer(self, method: str, body: dict[str, Any]) -> tuple[int, object]:
        """The status and JSON body for one call (after the latency)."""
        started = time.perf_counter()
        with self._lock:
            self.requests += 1
            self._serving += 1
            self.serving_max = max(self.serving_max, self._serving)
        try:
            if self.latency_s:
                time.sleep(self.latency_s)
            if method == "generateContent":
                config = body.get("generationConfig", {})
                schema = config.get("responseSchema") or config.get("responseJsonSchema") or {}
                text = json.dumps(minimal_instance(schema)) if schema else "bench"
                return 200, {
                    "candidates": [
                        {
                            "content": {"role": "model", "parts": [{"text": text}]},
                            "finishReason": "STOP",
                        }
                    ],
                    "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1},
                    "modelVersion": "bench-fake",
                }
            if method == "batchEmbedContents":
                vectors = [
                    {
                        "values": _vector(
                            " ".join(p.get("text", "") for p in item["content"]["parts"]),
                            int(item.get("outputDimensionality", 768)),
                        )
                    }
                    for item in body.get("requests", [])
                ]
                return 200, {"embeddings": vectors}
            return 404, {"error": {"code": 404, "message": f"unknown method {method}"}}
        finally:
            with self._lock:
                self._serving -= 1
                self.busy_s += time.perf_counter() - started

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Stay quiet."""

            def do_POST(self) -> None:
                """Answer one API call."""
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length) if length else b"{}"
                match = _PATH.match(self.path.split("?", 1)[0])
                method = match["method"] if match else ""
                status, body = fake.answer(method, json.loads(raw or b"{}"))
                payload = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json; charset=UTF-8")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler
