"""A slow note call changes nothing: notes and profile updates go by close and due times."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import cast

import anyio
import pytest

from vivy.app import running_app
from vivy.clock import Clock
from vivy.config import BufferSettings, Settings
from vivy.llm.offline import OfflineLLM
from vivy.llm.port import Generation, GenerationRequest, Operation, T
from vivy.llm.schemas import ConversationDraft, NoteInput
from vivy.storage.sqlite.db import Connection

from .harness import message

pytestmark = pytest.mark.anyio

START = 1772409600.0
HOUR = 3600.0
WINDOW_S = 1500.0
DELAY_S = 12 * HOUR
SLOW_S = 20 * HOUR


class SlowSecondChannel(OfflineLLM):
    """Offline answers without profile operations in the note (so members' updates take
    their own coalesced calls); the note of channel 2 takes 20 virtual hours. Records update
    calls."""

    def __init__(self) -> None:
        super().__init__()
        self.update_batches: list[int] = []

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """Delay channel 2's note; count the notes of each profile update call."""
        payload = request.payload
        slow = isinstance(payload, NoteInput) and payload.channel_id == 2
        if request.operation is Operation.NOTE and slow:
            await anyio.sleep(SLOW_S)
        if request.operation is Operation.PROFILE_UPDATE:
            self.update_batches.append(len(getattr(payload, "notes", ())))
        answer = await super().generate(request)
        if isinstance(answer.value, ConversationDraft):
            # A bare note: its members' updates take the separate, coalesced calls.
            bare = answer.value.model_copy(update={"profiles": []})
            return dataclasses.replace(answer, value=cast(T, bare))
        return answer


def rows(conn: Connection, sql: str) -> list[tuple[object, ...]]:
    """Every row of ``sql`` as a tuple."""
    return [tuple(r) for r in conn.execute(sql).fetchall()]


async def test_update_waits_for_an_earlier_note_and_takes_it_along(tmp_path: Path) -> None:
    """Member 7 talks in channel 1, then an hour later in channel 2, whose note takes 20 h.
    When the update of channel 1's note comes due (12 h), channel 2's note, closed before
    that, is still being written: the update waits for it, takes both notes in one call and
    is stamped with its due time; each note is stamped with its close time."""
    llm = SlowSecondChannel()
    settings = Settings(
        database=tmp_path / "v.db",
        buffers=BufferSettings(inactivity_min_s=WINDOW_S, inactivity_max_s=WINDOW_S),
        profile_delay_s=DELAY_S,
    )
    async with running_app(
        settings, clock=Clock.starting_at(START), inline=True, llm=llm, scheduler=False
    ) as app:
        await app.router.ingest(message(1, channel=1, text="I live in Lisbon", at=START))
        await app.router.ingest(message(2, channel=1, author=8, text="nice", at=START + 60))
        await anyio.sleep(HOUR)
        second = START + HOUR
        await app.router.ingest(message(3, channel=2, text="I love surfing", at=second))
        await app.router.ingest(message(4, channel=2, author=8, text="cool", at=second + 60))
        await anyio.sleep(2 * SLOW_S)
        notes = await app.db.read(
            rows, "SELECT channel_id, created_at FROM interaction_notes ORDER BY id"
        )
        facts = await app.db.read(
            rows, "SELECT DISTINCT created_at FROM profile_facts WHERE user_id = 7"
        )
    # Both messages of a channel arrive at once: its buffer closes a window after that.
    first_close = START + WINDOW_S
    second_close = second + WINDOW_S
    assert notes == [(1, first_close), (2, second_close)]
    assert llm.update_batches[0] == 2  # member 7: both notes in the first call
    assert facts == [(first_close + DELAY_S,)]
