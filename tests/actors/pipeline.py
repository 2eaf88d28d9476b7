"""The whole capture pipeline (router → NoteWriter → ProfileUpdaters) for tests."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from vivy.actors.note_writer import NoteWriter
from vivy.actors.profile_updater import ProfileUpdaters
from vivy.actors.router import Router
from vivy.clock import Clock
from vivy.llm.offline import OfflineLLM
from vivy.llm.port import LLM
from vivy.state.gate import CapturePolicy
from vivy.state.profile import Rejection
from vivy.storage.sqlite.db import Database
from vivy.storage.sqlite.stores import sqlite_store

from .harness import FIXED, WALL0, CountingObserver


@dataclass
class PipelineObserver(CountingObserver):
    """Counts notes, discards, profile updates and rejections too."""

    notes: Counter[str] = field(default_factory=Counter)
    discarded: int = 0
    updates: Counter[str] = field(default_factory=Counter)
    rejected: Counter[str] = field(default_factory=Counter)

    def note_written(self, note_type: str) -> None:
        """Count a note."""
        self.notes[note_type] += 1

    def buffer_discarded(self) -> None:
        """Count a discarded buffer."""
        self.discarded += 1

    def profile_update(self, outcome: str) -> None:
        """Count a profile update outcome."""
        self.updates[outcome] += 1

    def fact_rejected(self, reason: Rejection) -> None:
        """Count a rejected fact."""
        self.rejected[reason] += 1


@dataclass
class Pipeline:
    """The running pieces."""

    router: Router
    writer: NoteWriter
    profiles: ProfileUpdaters
    db: Database
    clock: Clock
    observer: PipelineObserver


@asynccontextmanager
async def running_pipeline(
    path: Path, *, llm: LLM | None = None, wall0: float = WALL0
) -> AsyncIterator[Pipeline]:
    """Run the capture pipeline on an inline database at ``path`` until the block ends."""

    db = Database.open(path, inline=True)
    clock = Clock(wall_origin=wall0, mono_origin=0.0)
    observer = PipelineObserver()
    model = llm or OfflineLLM()
    store = sqlite_store(db)
    profiles = ProfileUpdaters(store=store, llm=model, clock=clock, observer=observer)
    writer = NoteWriter(store=store, llm=model, clock=clock, profiles=profiles, observer=observer)
    router = Router(
        store=store,
        clock=clock,
        buffers=FIXED,
        policy=CapturePolicy(own_user_id=1),
        hand_off=writer,
        observer=observer,
    )
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(profiles.run)
            await tg.start(writer.run)
            await tg.start(router.run)
            yield Pipeline(router, writer, profiles, db, clock, observer)
            tg.cancel_scope.cancel()
    finally:
        db.close()
