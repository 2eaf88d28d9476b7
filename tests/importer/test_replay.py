"""Replaying exports through the live pipeline on virtual time: notes, profiles, resumption."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
import sniffio

from vivy.config import Settings
from vivy.errors import LLMUnavailable
from vivy.importer import (
    ImportFormatError,
    ImportProgress,
    RealTimeLLM,
    import_exports,
)
from vivy.llm.offline import OfflineLLM
from vivy.llm.port import EmbeddingTask, Generation, GenerationRequest, Operation, T
from vivy.memory.facts import Fact
from vivy.memory.notes import Note
from vivy.storage import maintenance as upkeep
from vivy.storage import notes as note_store
from vivy.storage import profiles as profile_store
from vivy.storage.sqlite.db import Connection, Database

from . import ANA, BEN, CLEO, GUILD, LOUNGE, THREAD, THREAD_LATER, TWO_DAYS, import_files, snapshot

DEMO = Path(__file__).parents[2] / "vivy" / "data" / "demo_export.json"


def _notes(db: Path) -> list[Note]:
    database = Database.open(db)
    try:
        ids = [
            int(r[0])
            for r in database.read_sync(
                lambda c: c.execute("SELECT id FROM interaction_notes ORDER BY id").fetchall()
            )
        ]
        return database.read_sync(note_store.get_notes, ids)
    finally:
        database.close()


def _facts(db: Path, guild: int, user: int) -> list[Fact]:
    database = Database.open(db)
    try:
        return database.read_sync(profile_store.active_facts, guild, user)
    finally:
        database.close()


def _summary(db: Path) -> list[tuple[str, str, str, frozenset[int]]]:
    """What a replay produced, without the ids and times that depend on the run."""
    return [
        (n.note_type, n.channel_name, n.title, frozenset(p.user_id for p in n.participants))
        for n in _notes(db)
    ]


def test_export_becomes_notes_and_sourced_profile_facts(tmp_path: Path) -> None:
    """Five conversations (split by > 30 min gaps and channel) become five notes with facts."""
    db = tmp_path / "v.db"
    report = import_files(db, TWO_DAYS)
    assert (report.files, report.messages, report.stored, report.duplicates) == (1, 25, 22, 0)
    assert report.skipped_by_type == {"ChannelPinnedMessage": 1, "GuildMemberJoin": 1}
    assert report.excluded == {"excluded_bot": 1}
    assert report.notes_written == 5
    assert report.complete and report.llm == "offline"
    assert [d.isoformat() for d in report.days] == ["2026-04-06", "2026-04-07"]
    conversations = [n for n in _notes(db) if n.note_type == "conversation"]
    assert [(n.channel_id, n.note_date) for n in conversations] == [
        (LOUNGE, "2026-04-06"),
        (THREAD, "2026-04-06"),
        (LOUNGE, "2026-04-06"),
        (LOUNGE, "2026-04-07"),
        (THREAD, "2026-04-07"),
    ]
    people = [frozenset(p.user_id for p in n.participants) for n in conversations]
    assert people == [
        frozenset({ANA, BEN, CLEO}),
        frozenset({ANA, BEN, CLEO}),
        frozenset({BEN, CLEO}),
        frozenset({ANA, BEN, CLEO}),
        frozenset({ANA, BEN, CLEO}),
    ]
    first = conversations[0]
    assert first.started_at == pytest.approx(1775498400.0)  # 2026-04-06T18:00Z, from the export
    assert {p.display_name for p in first.participants} == {"Ana", "ben", "Cleo"}
    ben = {f.text: f for f in _facts(db, GUILD, BEN)}
    assert "Lives in Austin" in ben
    assert ben["Lives in Austin"].source_note_id == first.id
    assert ben["Lives in Austin"].source_label == f"{first.title}, Apr 6"
    assert any("Dell" in text for text in ben)
    assert any("bakery" in f.text for f in _facts(db, GUILD, CLEO))
    assert report.facts_added == 5


def test_importing_twice_changes_nothing(tmp_path: Path) -> None:
    """A second import of the same file finds every id already seen and writes no row."""
    db = tmp_path / "v.db"
    import_files(db, TWO_DAYS)
    before = snapshot(db)
    again = import_files(db, TWO_DAYS)
    assert (again.stored, again.duplicates, again.notes_written, again.facts_added) == (0, 23, 0, 0)
    assert again.days == ()
    assert snapshot(db) == before


def test_later_overlapping_export_adds_only_new_messages(tmp_path: Path) -> None:
    """A later export of the thread stores its two new messages and skips the known ones."""
    db = tmp_path / "v.db"
    import_files(db, TWO_DAYS)
    report = import_files(db, THREAD_LATER, TWO_DAYS)
    assert (report.stored, report.duplicates, report.repeated) == (2, 23, 3)
    assert report.notes_written == 1
    assert [d.isoformat() for d in report.days] == ["2026-04-08"]
    last = _notes(db)[-1]
    assert (last.channel_name, last.note_date) == ("trip-planning", "2026-04-08")
    assert {p.user_id for p in last.participants} == {BEN, CLEO}


@pytest.mark.parametrize("damage", ["truncate", "bad_field"])
def test_malformed_input_leaves_the_database_row_for_row(tmp_path: Path, damage: str) -> None:
    """A truncated or invalid file fails before any write, even with a valid file before it."""
    db = tmp_path / "v.db"
    import_files(db, TWO_DAYS)
    before = snapshot(db)
    bad = tmp_path / "bad.json"
    if damage == "truncate":
        text = THREAD_LATER.read_text()
        bad.write_text(text[: len(text) * 2 // 3])
    else:
        data = json.loads(THREAD_LATER.read_text())
        data["messages"][4]["timestamp"] = "2026-04-08 twelve o'clock"
        bad.write_text(json.dumps(data))
    with pytest.raises(ImportFormatError) as info:
        import_files(db, THREAD_LATER, bad)
    assert str(info.value).startswith(f"{bad}: ")
    if damage == "bad_field":
        assert "messages[4].timestamp: not an ISO-8601 time" in str(info.value)
    assert snapshot(db) == before


def test_failed_validation_does_not_create_a_database(tmp_path: Path) -> None:
    """Nothing, not even an empty database file, is written for invalid input."""
    bad = tmp_path / "bad.json"
    bad.write_text("[{")
    with pytest.raises(ImportFormatError):
        import_files(tmp_path / "new.db", bad)
    assert not (tmp_path / "new.db").exists()


class _Interrupt(Exception):
    """Stands in for a crash partway through a replay."""


def test_interrupted_import_is_finished_by_running_it_again(tmp_path: Path) -> None:
    """A replay stopped after 12 messages, then re-run, ends exactly like an uninterrupted one."""
    clean = tmp_path / "clean.db"
    import_files(clean, TWO_DAYS)

    def crash(p: ImportProgress) -> None:
        if p.seen == 12:
            raise _Interrupt

    db = tmp_path / "v.db"
    with pytest.raises(_Interrupt):
        import_exports([TWO_DAYS], Settings(), llm=OfflineLLM(), database=db, progress=crash)
    partial = snapshot(db)
    assert partial["buffer_messages"][0] > 0  # the open buffer survived the crash
    report = import_files(db, TWO_DAYS)
    assert report.duplicates > 0 and report.complete
    assert _summary(db) == _summary(clean)
    for user in (ANA, BEN, CLEO):
        assert [f.text for f in _facts(db, GUILD, user)] == [
            f.text for f in _facts(clean, GUILD, user)
        ]
    assert snapshot(db)["channel_buffers"][0] == 0


class _NotesFail(OfflineLLM):
    """The offline provider, except that every note request fails."""

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """Fail notes like an unreachable service; answer everything else."""
        if request.operation is Operation.NOTE:
            raise LLMUnavailable("503 from the model")
        return await super().generate(request)


def test_llm_outage_leaves_work_pending_for_a_rerun(tmp_path: Path) -> None:
    """Buffers whose notes keep failing stay in the outbox; the next run writes them."""
    db = tmp_path / "v.db"
    failed = import_exports([TWO_DAYS], Settings(), llm=_NotesFail(), database=db)
    assert not failed.complete
    assert (failed.pending_buffers, failed.notes_written, failed.days) == (5, 0, ())
    assert failed.stored == 22
    done = import_files(db, TWO_DAYS)
    assert done.complete and done.notes_written == 5
    assert [d.isoformat() for d in done.days] == ["2026-04-06", "2026-04-07"]


class _NightlyFails(OfflineLLM):
    """The offline provider, except that every topic-cluster request fails."""

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """Fail the nightly job's cluster pass; answer everything else."""
        if request.operation is Operation.TOPIC_CLUSTER:
            raise LLMUnavailable("503 from the model")
        return await super().generate(request)


def test_a_failed_nightly_day_is_reported_not_counted_as_done(tmp_path: Path) -> None:
    """A day whose nightly job failed is listed as failed, leaves the import incomplete, and
    is not recorded as done, so the next run does it."""
    db = tmp_path / "v.db"
    failed = import_exports([TWO_DAYS], Settings(), llm=_NightlyFails(), database=db)
    assert failed.failed_days and not failed.complete
    assert set(failed.failed_days).isdisjoint(failed.days)
    done = import_files(db, TWO_DAYS)
    assert done.complete
    assert set(done.days) >= set(failed.failed_days)


class _AsyncioOnly(OfflineLLM):
    """The offline provider behind asyncio-only awaits, like a network client would use."""

    def __init__(self) -> None:
        super().__init__()
        self.backends: set[str] = set()

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """Answer after a short real-time asyncio sleep."""
        self.backends.add(sniffio.current_async_library())
        await asyncio.sleep(0.001)
        return await super().generate(request)

    async def embed(self, texts: Sequence[str], task: EmbeddingTask) -> list[list[float]]:
        """Embed after a short real-time asyncio sleep."""
        await asyncio.sleep(0.001)
        return await super().embed(texts, task)


def test_real_time_llm_runs_a_network_style_llm_beside_the_mock_clock(tmp_path: Path) -> None:
    """An asyncio-bound LLM works under the trio replay through RealTimeLLM, same notes."""
    clean = tmp_path / "clean.db"
    import_files(clean, TWO_DAYS)
    inner = _AsyncioOnly()
    wrapped = RealTimeLLM(lambda: inner)
    db = tmp_path / "v.db"
    report = import_exports([TWO_DAYS], Settings(), llm=wrapped, database=db)
    assert report.complete and report.notes_written == 5
    assert inner.backends == {"asyncio"}
    assert report.calls_in_flight_max >= 1
    assert _summary(db) == _summary(clean)


def _counts(conn: Connection) -> dict[str, int]:
    return {
        "notes": upkeep.count_rows(conn, "interaction_notes"),
        "outbox": upkeep.count_rows(conn, "channel_buffers"),
        "pending": conn.execute(
            "SELECT COUNT(*) FROM profile_updates WHERE status = 'pending'"
        ).fetchone()[0],
    }


def test_bundled_demo_export_imports_completely(tmp_path: Path) -> None:
    """The bundled 405-message, three-day demo replays completely: every note, no pending
    work, and the members' latest facts (its speed is the import benchmark's)."""
    db = tmp_path / "demo.db"
    report = import_files(db, DEMO)
    assert (report.messages, report.stored) == (405, 399)
    assert report.excluded == {"excluded_bot": 5, "empty": 1}
    assert report.notes_written == 16  # 20 conversations, 5 too small, one split at 2 h
    assert report.complete and len(report.days) == 3
    database = Database.open(db)
    try:
        assert database.read_sync(_counts) == {
            "notes": 16 + report.clusters_written,
            "outbox": 0,
            "pending": 0,
        }
        jordan = database.read_sync(
            profile_store.active_facts, 871000000000000001, 510215858421760003
        )
        kai = database.read_sync(profile_store.active_facts, 871000000000000001, 716198731841536005)
    finally:
        database.close()
    places = [f.text for f in jordan if f.section == "bio" and "Lives in" in f.text]
    assert any("Denver" in text for text in places)
    assert not any("Portland" in text for text in places)
    assert not any("owner" in f.text.lower() or "admin" in f.text.lower() for f in kai)
