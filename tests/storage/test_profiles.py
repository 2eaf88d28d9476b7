"""The profile-update outbox: rows carrying a note call's operations, read back validated."""

from __future__ import annotations

from pathlib import Path

from vivy.llm.schemas import AddFact, InvalidateFact, ProfileOperations
from vivy.state.buffer import CloseReason
from vivy.storage import buffers as buffer_store
from vivy.storage import notes as note_store
from vivy.storage import profiles as profile_store
from vivy.storage.db import Connection, Database, _statements, connect
from vivy.storage.schema import MIGRATIONS

GUILD = 5


def closed_buffer(conn: Connection) -> int:
    """A closed, empty buffer in channel 1, ready to become a note."""
    buffer_id = buffer_store.open_buffer(conn, GUILD, 1, "general", 100.0, 1500.0)
    buffer_store.close_buffer(conn, buffer_id, 200.0, CloseReason.INACTIVITY)
    return buffer_id


def new_note(*users: int) -> note_store.NewNote:
    """A conversation note with these participants."""
    return note_store.NewNote(
        guild_id=GUILD,
        channel_id=1,
        channel_name="general",
        note_type="conversation",
        title="Moving day",
        summary="They talked.",
        topics=(),
        decisions=(),
        open_questions=(),
        entities=(),
        participants=tuple(note_store.Participant(u, f"user{u}", 1) for u in users),
        note_date="2026-03-02",
        quality="offline",
        model="offline",
        embedding=[1.0] + [0.0] * 767,
        created_at=300.0,
    )


def test_update_rows_carry_the_note_calls_operations(db: Database) -> None:
    """Planned operations and their basis version come back validated; others carry none."""
    ops = ProfileOperations(
        operations=[
            InvalidateFact(op="invalidate", fact_id=4, reason="moved"),
            AddFact(op="add", section="bio", text="Lives in Denver"),
        ]
    )
    planned = {7: note_store.PlannedUpdate(profile_store.encode_operations(ops), 3)}

    def commit(conn: Connection) -> int | None:
        return note_store.commit_conversation_note(
            conn, closed_buffer(conn), new_note(7, 8), planned=planned
        )

    note_id = db.write_sync(commit)
    pending = {u.user_id: u for u in db.read_sync(profile_store.pending_updates)}
    assert pending[7].note_id == note_id
    assert (pending[7].operations, pending[7].basis_version) == (ops, 3)
    assert (pending[8].operations, pending[8].basis_version) == (None, None)


def test_stored_operations_are_validated_again() -> None:
    """A row whose JSON no longer fits the schema is never applied: it needs its own call."""
    assert profile_store.decode_operations(None) is None
    assert profile_store.decode_operations('{"operations": [{"op": "grant_admin"}]}') is None


def test_stored_operations_keep_no_quotes_and_go_once_applied(db: Database) -> None:
    """Evidence quotes are not stored, and an applied update keeps no operations at all."""
    quoted = AddFact(op="add", section="bio", text="Lives in Oslo", evidence="<@9> I live in Oslo")
    ops = ProfileOperations(operations=[quoted])
    planned = {7: note_store.PlannedUpdate(profile_store.encode_operations(ops), 0)}

    def commit(conn: Connection) -> int | None:
        return note_store.commit_conversation_note(
            conn, closed_buffer(conn), new_note(7), planned=planned
        )

    db.write_sync(commit)
    (update,) = db.read_sync(profile_store.pending_updates)
    assert update.operations == ProfileOperations(
        operations=[quoted.model_copy(update={"evidence": ""})]
    )
    db.write_sync(lambda c: profile_store.mark_updates_applied(c, [update.id], 400.0))
    stored = db.read_sync(
        lambda c: c.execute("SELECT status, operations FROM profile_updates").fetchall()
    )
    assert [tuple(row) for row in stored] == [("applied", None)]


def test_the_migration_keeps_updates_pending_before_it(tmp_path: Path) -> None:
    """Migrating a version-1 database leaves its pending updates needing a call, as they did."""
    path = tmp_path / "old.db"
    conn = connect(path)
    for statement in _statements(MIGRATIONS[0]):
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.execute(
        "INSERT INTO interaction_notes (id, guild_id, channel_id, note_type, title, summary,"
        " note_date, quality, created_at) VALUES (1, 100, 1, 'conversation', 't', 's',"
        " '2026-03-02', 'offline', 0)"
    )
    conn.execute(
        "INSERT INTO profile_updates (guild_id, user_id, note_id, created_at, next_attempt_at)"
        " VALUES (100, 7, 1, 0, 0)"
    )
    conn.close()
    upgraded = Database.open(path)
    try:
        (update,) = upgraded.read_sync(profile_store.pending_updates)
    finally:
        upgraded.close()
    assert (update.user_id, update.operations, update.basis_version) == (7, None, None)
