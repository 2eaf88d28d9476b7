"""The outbox across crashes: pending profile updates, lost hand-offs, bounded catch-up."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import TypeVar

import anyio
import pytest

from vivy.app import running_app
from vivy.clock import Clock
from vivy.config import BufferSettings, Settings
from vivy.llm.offline import OfflineLLM
from vivy.llm.port import Generation, GenerationRequest, Operation
from vivy.storage.sqlite.db import Connection

from .harness import message

pytestmark = pytest.mark.anyio

T = TypeVar("T")
START = datetime(2026, 3, 2, 12, tzinfo=UTC).timestamp()


def settings(path: Path, **changes: object) -> Settings:
    """A 25-minute window, profile updates an hour after their note, no catch-up wait."""
    base: dict[str, object] = {
        "database": path,
        "buffers": BufferSettings(inactivity_min_s=1500.0, inactivity_max_s=1500.0),
        "profile_delay_s": 3600.0,
    }
    base.update(changes)
    return Settings(**base)  # type: ignore[arg-type]


def scalar(conn: Connection, sql: str) -> int:
    """One integer from a query."""
    return int(conn.execute(sql).fetchone()[0])


async def test_crash_between_note_and_profile_updates_loses_no_update(tmp_path: Path) -> None:
    """Updates committed with the note but not applied before a stop are applied once after."""
    path = tmp_path / "v.db"
    async with running_app(
        settings(path), clock=Clock.starting_at(START), inline=True, llm=OfflineLLM()
    ) as app:
        await app.router.ingest(message(1, author=11, text="I live in Austin and I love JRPGs"))
        await app.router.ingest(message(2, author=12, text="I work at Dell as a QA engineer"))
        await anyio.sleep(2000)  # the note is written at 1500 s; its updates wait an hour
        assert await app.db.read(scalar, "SELECT COUNT(*) FROM interaction_notes") == 1
        assert (
            await app.db.read(
                scalar, "SELECT COUNT(*) FROM profile_updates WHERE status = 'pending'"
            )
            == 2
        )
    later = START + 3 * 3600
    seen: list[list[str]] = []
    for _ in range(2):  # a restart applies them; a second restart finds nothing to do
        async with running_app(
            settings(path),
            clock=Clock.starting_at(later),
            inline=True,
            llm=OfflineLLM(),
            scheduler=False,
        ) as again:
            await anyio.sleep(10)
            pending = await again.db.read(
                scalar, "SELECT COUNT(*) FROM profile_updates WHERE status = 'pending'"
            )
            assert pending == 0
            facts = await again.db.read(
                lambda c: sorted(r[0] for r in c.execute("SELECT text FROM profile_facts"))
            )
            seen.append(facts)
    assert seen[0] == seen[1]
    assert any("Austin" in text for text in seen[0]) and any("Dell" in t for t in seen[0])
    assert len(seen[0]) == len(set(seen[0]))


async def test_outbox_rescan_writes_a_buffer_whose_hand_off_was_lost(tmp_path: Path) -> None:
    """A closed buffer nobody handed off (an actor died after closing it) becomes a note once
    the rescan that a channel actor's restart requests runs, with no timer involved."""
    path = tmp_path / "v.db"
    async with running_app(
        settings(path), clock=Clock.starting_at(START), inline=True, llm=OfflineLLM()
    ) as app:
        await app.router.ingest(message(1, text="anyone tried the new Persona game?"))
        await app.router.ingest(message(2, author=8, text="yes, I love it"))
        await app.db.write(
            lambda c: c.execute("UPDATE channel_buffers SET status = 'closed', closed_at = 0")
        )
        await anyio.sleep(60)  # well before the buffer's own inactivity deadline
        assert await app.db.read(scalar, "SELECT COUNT(*) FROM interaction_notes") == 0
        app.notes.request_rescan()  # what the router's restart of a crashed actor triggers
        await anyio.sleep(1)
        assert await app.db.read(scalar, "SELECT COUNT(*) FROM interaction_notes") == 1


class SlowClustering(OfflineLLM):
    """The offline provider, with topic clustering taking ten virtual minutes."""

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """Sleep before clustering; answer everything offline."""
        if request.operation is Operation.TOPIC_CLUSTER:
            await anyio.sleep(600)
        return await super().generate(request)


async def test_catch_up_is_bounded_then_continues_in_the_background(tmp_path: Path) -> None:
    """Start-up waits for the catch-up at most its time limit; the rest finishes after."""
    path = tmp_path / "v.db"
    async with running_app(
        settings(path, profile_delay_s=0.0),
        clock=Clock.starting_at(START),
        inline=True,
        llm=OfflineLLM(),
    ) as app:
        for index in range(3):  # three conversations an hour apart
            await app.router.ingest(message(10 * index + 1, text="I love JRPGs so much"))
            await app.router.ingest(
                message(10 * index + 2, author=8, text="I prefer Linux over Windows")
            )
            await anyio.sleep(3600)
    restart = START + 2 * 86400
    started = anyio.current_time()
    async with running_app(
        settings(path, catchup_time_limit_s=60.0, min_cluster_notes=2),
        clock=Clock.starting_at(restart),
        inline=True,
        llm=SlowClustering(),
    ) as again:
        assert anyio.current_time() - started == 60.0
        assert again.scheduler.reports == []
        await anyio.sleep(3600)
        assert [r.day for r in again.scheduler.reports] == [date(2026, 3, 2), date(2026, 3, 3)]
