"""Graceful shutdown: stopping mid-call loses nothing, and a restart resumes exactly once.

``vivy run`` stops on SIGTERM by leaving the app's block, which cancels its task group. In
process, on virtual time, an LLM call that never returns is cut short and the app stops in
zero virtual time. In a subprocess on asyncio in real time (the production arrangement:
database on a worker thread), SIGTERM makes the process exit 0 by itself with an intact
database. Either way, the buffer whose note was being written stays in the outbox,
the open buffer stays open, and the next start writes exactly one note for each.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest

from vivy.app import running_app
from vivy.clock import Clock
from vivy.config import BufferSettings, Settings
from vivy.errors import StorageError
from vivy.llm.offline import OfflineLLM
from vivy.llm.port import Generation, GenerationRequest, Operation
from vivy.state.gate import IncomingMessage
from vivy.storage.sqlite.db import Connection, Database

T = TypeVar("T")

#: 2026-03-02T09:00:00Z.
WALL0 = 1772442000.0
GUILD = 900
#: Real seconds after which a child that has not stopped is taken to hang (a guard against
#: a stuck run, far above any machine's load, not a measure of speed).
HANG_S = 300.0


class BlockingLLM(OfflineLLM):
    """The offline provider, except that note calls hang until cancelled."""

    def __init__(self) -> None:
        super().__init__()
        self.started: anyio.Event | None = None
        self.cancelled = 0

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """Hang on note calls (an in-flight request); answer the rest offline."""
        if request.operation is not Operation.NOTE:
            return await super().generate(request)
        if self.started is not None:
            self.started.set()
        try:
            await anyio.sleep_forever()
        finally:
            self.cancelled += 1
        raise AssertionError("unreachable")


def settings(path: Path) -> Settings:
    """A fixed 10-minute window, profile updates at once."""
    return Settings(
        database=path,
        buffers=BufferSettings(inactivity_min_s=600.0, inactivity_max_s=600.0),
        profile_delay_s=0.0,
    )


def message(message_id: int, channel: int, author: int, text: str, at: float) -> IncomingMessage:
    """A human message of the test guild."""
    return IncomingMessage(GUILD, channel, message_id, author, f"m{author}", text, at)


def state(conn: Connection) -> dict[str, Any]:
    """Buffers (channel, status, attempts, messages), note count and the integrity verdict."""
    buffers = conn.execute(
        "SELECT b.channel_id, b.status, b.attempts, COUNT(m.message_id) FROM channel_buffers b"
        " LEFT JOIN buffer_messages m ON m.buffer_id = b.id GROUP BY b.id ORDER BY b.channel_id"
    ).fetchall()
    return {
        "buffers": [tuple(row) for row in buffers],
        "notes": conn.execute("SELECT COUNT(*) FROM interaction_notes").fetchone()[0],
        "integrity": conn.execute("PRAGMA integrity_check").fetchone()[0],
    }


def read_state(path: Path) -> dict[str, Any]:
    """:func:`state` of the database at ``path``, opened afresh."""
    db = Database.open(path)
    try:
        return db.read_sync(state)
    finally:
        db.close()


async def resume(path: Path, wall: float) -> dict[str, Any]:
    """Start again at ``wall`` with a working LLM, let everything drain, report the state."""
    async with running_app(
        settings(path), clock=Clock.starting_at(wall), inline=True, llm=OfflineLLM()
    ) as app:
        await anyio.sleep(3 * 3600.0)
        assert app.notes.backlog == 0
        return await app.db.read(state)


@pytest.mark.anyio
async def test_cancel_mid_call_stops_at_once_and_resumes_exactly_once(tmp_path: Path) -> None:
    """Stopping with a note call in flight takes no virtual time and loses nothing."""
    path = tmp_path / "vivy.db"
    llm = BlockingLLM()
    llm.started = anyio.Event()
    with anyio.fail_after(None) as guard:
        async with running_app(
            settings(path), clock=Clock.starting_at(WALL0), inline=True, llm=llm
        ) as app:
            for k, text in enumerate(["I live in Oslo", "I love chess", "see you"]):
                await app.router.ingest(message(1 + k, 1, 11 + k % 2, text, WALL0 + k))
            await anyio.sleep(700.0)  # channel 1 closes; its note call hangs
            assert llm.started.is_set()
            for k, text in enumerate(["I work at Dell", "nice"]):
                await app.router.ingest(message(10 + k, 2, 13 + k, text, app.clock.now()))
            # Leave the block as `vivy run` does on SIGTERM; a hang would reach the deadline.
            stopped_at = anyio.current_time()
            guard.deadline = stopped_at + 5.0
    assert anyio.current_time() == stopped_at
    assert llm.cancelled == 1
    after_stop = read_state(path)
    assert after_stop == {
        "buffers": [(1, "closed", 0, 3), (2, "open", 0, 2)],
        "notes": 0,
        "integrity": "ok",
    }
    resumed = await resume(path, WALL0 + 800.0)
    assert resumed == {"buffers": [], "notes": 2, "integrity": "ok"}
    again = await resume(path, WALL0 + 4 * 3600.0)
    assert again == {"buffers": [], "notes": 2, "integrity": "ok"}


#: Run by the subprocess test: the app on asyncio in real time, a note call hanging, a second
#: channel open; prints "ready", stops on SIGTERM by leaving the app's block, prints "stopped".
CHILD = """
import signal, sys, time
from pathlib import Path

import anyio

from vivy.app import running_app
from vivy.clock import Clock
from vivy.config import BufferSettings, Settings
from vivy.errors import StorageError
from vivy.logs import configure_logging
from vivy.state.gate import IncomingMessage
from tests.reliability.test_shutdown import BlockingLLM


async def main(path: str) -> None:
    configure_logging("warning")
    llm = BlockingLLM()
    llm.started = anyio.Event()
    settings = Settings(
        database=Path(path),
        buffers=BufferSettings(inactivity_min_s=3600.0, inactivity_max_s=3600.0, cap=3),
    )
    with anyio.open_signal_receiver(signal.SIGTERM) as signals:
        async with running_app(settings, clock=Clock.starting_at(time.time()), llm=llm) as app:
            assert not app.db.inline
            lines = [(1, 11, "I live in Oslo"), (1, 12, "I love chess"), (1, 11, "bye"),
                     (2, 13, "I work at Dell"), (2, 14, "nice")]
            for message_id, (channel, author, text) in enumerate(lines, start=1):
                await app.router.ingest(
                    IncomingMessage(900, channel, message_id, author, "m", text, time.time())
                )
            await llm.started.wait()
            print("ready", flush=True)
            async for _ in signals:
                break
    print("stopped", flush=True)


anyio.run(main, sys.argv[1], backend="asyncio")
"""


def read_line(stream: Any, deadline: float) -> str:
    """One line from a child's stdout, or "" once ``deadline`` (monotonic) passes."""
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        if not selector.select(max(0.0, deadline - time.monotonic())):
            return ""
    return str(stream.readline()).strip()


def test_sigterm_exits_by_itself_with_database_intact(tmp_path: Path) -> None:
    """SIGTERM mid-call: the process ends its hanging call and exits 0 of its own accord,
    buffers kept, integrity ok (that it takes no time at all is shown on virtual time
    above)."""
    path = tmp_path / "vivy.db"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready = read_line(child.stdout, time.monotonic() + HANG_S)
        assert ready == "ready", child.stderr.read() if child.stderr else ""
        child.send_signal(signal.SIGTERM)
        code = child.wait(timeout=HANG_S)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    out, err = child.communicate()
    assert code == 0, err
    assert out.strip() == "stopped"
    assert read_state(path) == {
        "buffers": [(1, "closed", 0, 3), (2, "open", 0, 2)],
        "notes": 0,
        "integrity": "ok",
    }


class ClosingLLM(OfflineLLM):
    """The offline provider, remembering whether it was closed."""

    closed = False

    async def aclose(self) -> None:
        """Close (after a checkpoint, like an HTTP client would)."""
        await anyio.lowlevel.checkpoint()
        self.closed = True


@pytest.mark.anyio
async def test_cancel_from_outside_still_closes_llm_and_database(tmp_path: Path) -> None:
    """Leaving the app's block by an enclosing cancellation still closes the LLM and database."""
    llm = ClosingLLM()
    with anyio.CancelScope() as stop:
        async with running_app(
            settings(tmp_path / "vivy.db"), clock=Clock.starting_at(WALL0), inline=True, llm=llm
        ) as app:
            stop.cancel()
            await anyio.sleep_forever()
    assert llm.closed
    with pytest.raises(StorageError):
        await app.db.read(state)
