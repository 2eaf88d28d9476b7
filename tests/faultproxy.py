"""A loopback TCP proxy that can black-hole, delay and reset, between Vivy and a server.

It listens on 127.0.0.1 and forwards each connection to the server's address (a TCP address
or a Unix socket, as the embedded PostgreSQL listens on), pumping each direction in a thread
of its own. :meth:`FaultProxy.black_hole` stops forwarding in both directions (what is sent
sits unanswered, as behind a partition); :meth:`FaultProxy.heal` forwards again;
``delay_s`` holds each chunk before forwarding it; :meth:`FaultProxy.reset` ends every open
connection with a TCP reset. Faults are switched by the test, never by a timer.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Iterator

from psycopg.conninfo import conninfo_to_dict, make_conninfo

__all__ = ["FaultProxy", "through"]

_CHUNK = 65536


class FaultProxy:
    """Forwards 127.0.0.1:``port`` to ``target`` (a ``(host, port)`` pair or a Unix socket
    path), with faults switched on and off by the test."""

    def __init__(self, target: tuple[str, int] | str) -> None:
        self._target = target
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port: int = self._listener.getsockname()[1]
        self._flowing = threading.Event()
        self._flowing.set()
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._closed = False
        #: Seconds each chunk is held before it is forwarded.
        self.delay_s = 0.0
        #: Connections accepted so far.
        self.accepted = 0
        self._thread = threading.Thread(target=self._accept, name="fault-proxy", daemon=True)
        self._thread.start()

    def black_hole(self) -> None:
        """Stop forwarding: bytes sent either way go unanswered until :meth:`heal`."""
        self._flowing.clear()

    def heal(self) -> None:
        """Forward again."""
        self._flowing.set()

    def reset(self) -> None:
        """End every open connection with a TCP reset (new ones are accepted)."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for client, server in pairs:
            _abort(client)
            with contextlib.suppress(OSError):
                server.close()

    def close(self) -> None:
        """Stop listening and end every connection."""
        self._closed = True
        self._flowing.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        self.reset()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            family = socket.AF_UNIX if isinstance(self._target, str) else socket.AF_INET
            server = socket.socket(family, socket.SOCK_STREAM)
            try:
                server.connect(self._target)
            except OSError:
                _abort(client)
                continue
            self.accepted += 1
            with self._lock:
                self._pairs.append((client, server))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                self._flowing.wait()
                data = source.recv(_CHUNK)
                if not data:
                    break
                if self.delay_s:
                    threading.Event().wait(self.delay_s)
                self._flowing.wait()  # a chunk read before a black hole is held too
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)


def _abort(sock: socket.socket) -> None:
    """Close ``sock`` with a reset rather than an orderly end."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


def target_of(uri: str) -> tuple[str, int] | str:
    """Where a libpq connection string points: a Unix socket path or a TCP address."""
    info = conninfo_to_dict(uri)
    host = str(info.get("host") or "localhost")
    port = int(info.get("port") or 5432)
    if host.startswith("/"):
        return f"{host}/.s.PGSQL.{port}"
    return (host, port)


@contextlib.contextmanager
def through(uri: str) -> Iterator[tuple[FaultProxy, str]]:
    """A proxy in front of the server of ``uri``, and the URI that connects through it."""
    proxy = FaultProxy(target_of(uri))
    try:
        yield proxy, make_conninfo(uri, host="127.0.0.1", port=str(proxy.port))
    finally:
        proxy.close()
