"""Evidence storage against a real database: windows, their indexes, edits, deletes, retention."""

from __future__ import annotations

from functools import partial

import pytest

from vivy.state.buffer import BufferedMessage, CloseReason
from vivy.storage import buffers, evidence
from vivy.storage.db import Connection, Database
from vivy.storage.members import forget_member, set_opted_out
from vivy.storage.notes import NewNote, Participant, commit_conversation_note, serialize_vector
from vivy.storage.profiles import mark_updates_applied

WALL0 = 1772409600.0
GUILD = 100
OTHER_GUILD = 200
DIM = 768


def unit(index: int) -> list[float]:
    """A unit vector along dimension ``index``."""
    vector = [0.0] * DIM
    vector[index] = 1.0
    return vector


LINES = [
    (1, 7, "Sam", "finally adopted the puppy"),
    (2, 8, "Maya", "omg name??"),
    (3, 7, "Sam", "we went with Biscuit"),
    (4, 8, "Maya", "perfect name lol"),
    (5, 7, "Sam", "he already chewed my shoe"),
    (6, 8, "Maya", "classic"),
]


def store_note(db: Database, guild_id: int = GUILD, channel_id: int = 1, base: int = 0) -> int:
    """Commit a six-line conversation with its evidence windows, as the note writer does."""
    lines = [(base + m, author, name, text) for m, author, name, text in LINES]

    def write(conn: Connection) -> int:
        buffer_id = buffers.open_buffer(conn, guild_id, channel_id, "pets", WALL0, 1500.0)
        buffers.append_messages(
            conn,
            buffer_id,
            [BufferedMessage(m, a, n, t, WALL0 + m) for m, a, n, t in lines],
            WALL0 + 60,
        )
        buffers.close_buffer(conn, buffer_id, WALL0 + 3600, CloseReason.INACTIVITY)
        windows = evidence.windows_of([(m, n, t) for m, _, n, t in lines])
        note = NewNote(
            guild_id=guild_id,
            channel_id=channel_id,
            channel_name="pets",
            note_type="conversation",
            title="Sam's new puppy",
            summary="Sam adopted a puppy.",
            topics=("pets",),
            decisions=(),
            open_questions=(),
            entities=(),
            participants=(Participant(7, "Sam", 3), Participant(8, "Maya", 3)),
            note_date="2026-03-02",
            quality="ok",
            model="test",
            embedding=unit(0),
            created_at=WALL0 + 3600,
            started_at=WALL0,
            ended_at=WALL0 + 6,
            windows=tuple(windows),
            window_embeddings=tuple(unit(i + 1) for i in range(len(windows))),
        )
        found = commit_conversation_note(conn, buffer_id, note)
        assert found is not None
        return found

    return db.write_sync(write)


def count(conn: Connection, table: str) -> int:
    """Rows in ``table``."""
    return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


def embedded(conn: Connection) -> int:
    """Windows that still have their embedding."""
    return int(
        conn.execute(
            "SELECT COUNT(*) FROM evidence_windows WHERE embedding IS NOT NULL"
        ).fetchone()[0]
    )


def keyword(db: Database, guild_id: int, term: str) -> list[int]:
    """Note ids whose windows match ``term`` in the guild."""
    found = db.read_sync(partial(evidence.window_keyword_search, limit=10), guild_id, f'"{term}"')
    return [match.note_id for match in found]


@pytest.mark.parametrize(
    ("lines", "spans"),
    [
        (1, [(1, 1)]),
        (4, [(1, 4)]),
        (5, [(1, 4), (3, 5)]),
        (6, [(1, 4), (3, 6)]),
        (9, [(1, 4), (3, 6), (5, 8), (7, 9)]),
    ],
)
def test_windows_overlap_and_cover_every_line(lines: int, spans: list[tuple[int, int]]) -> None:
    """Windows of four lines start every two lines, and the last one ends at the last line."""
    rows = [(i, "Sam", f"line {i}") for i in range(1, lines + 1)]
    found = evidence.windows_of(rows)
    assert [(w.first_message_id, w.last_message_id) for w in found] == spans
    assert found[0].text.startswith("Sam: line 1")


def test_blank_lines_are_left_out_of_windows() -> None:
    """Attachments-only messages (no text) take no place in a window."""
    assert evidence.windows_of([(1, "Sam", " "), (2, "Sam", "hi")])[0].first_message_id == 2
    assert evidence.windows_of([(1, "Sam", "")]) == []


def test_note_commit_keeps_lines_windows_and_vectors(db: Database) -> None:
    """A note's lines stay, its windows are keyword-indexed (stemmed) and embedded by guild."""
    note_id = store_note(db)
    assert db.read_sync(count, "note_lines") == 6
    assert db.read_sync(count, "evidence_windows") == 2
    assert db.read_sync(embedded) == 2
    assert keyword(db, GUILD, "chewing") == [note_id]  # porter: chewing ~ chewed
    assert keyword(db, OTHER_GUILD, "biscuit") == []
    nearest = db.read_sync(
        evidence.window_similarities, GUILD, [note_id], serialize_vector(unit(2))
    )
    assert [(m.note_id, round(m.score, 3)) for m in nearest] == [(note_id, 1.0), (note_id, 0.0)]
    assert db.read_sync(evidence.window_similarities, OTHER_GUILD, [note_id], b"") == []
    assert db.read_sync(evidence.evidence_problems) == []


def test_a_delete_after_the_note_removes_the_line_and_its_words(db: Database) -> None:
    """A Discord delete of a noted message leaves neither its line, its words nor the
    embedding of any window that held it."""
    note_id = store_note(db)
    assert db.write_sync(buffers.delete_stored_message, 3)
    assert keyword(db, GUILD, "biscuit") == []
    assert keyword(db, GUILD, "puppy") == [note_id]
    assert db.read_sync(count, "note_lines") == 5
    assert db.read_sync(embedded) == 0  # both windows held message 3: their vectors go
    assert not db.write_sync(buffers.delete_stored_message, 3)


def test_an_edit_after_the_note_rewrites_the_line(db: Database) -> None:
    """A Discord edit of a noted message changes what is found and quoted."""
    store_note(db)
    assert db.write_sync(buffers.edit_stored_message, 3, "we went with Waffles", WALL0 + 99)
    assert keyword(db, GUILD, "biscuit") == []
    assert keyword(db, GUILD, "waffles") != []
    lines = db.read_sync(evidence.lines_of_notes, [1])[1]
    assert [line.text for line in lines if line.message_id == 3] == ["we went with Waffles"]


def test_forget_me_and_opt_out_remove_a_members_lines(db: Database) -> None:
    """Opting out removes the member's lines; the other member's stay searchable."""
    store_note(db)
    store_note(db, OTHER_GUILD, channel_id=2, base=100)
    db.write_sync(set_opted_out, GUILD, 7, "Sam", True, WALL0)
    assert keyword(db, GUILD, "biscuit") == []
    assert keyword(db, GUILD, "classic") != []
    assert keyword(db, OTHER_GUILD, "biscuit") != []  # another guild is not touched
    db.write_sync(forget_member, OTHER_GUILD, 7)
    assert keyword(db, OTHER_GUILD, "biscuit") == []


def test_retention_prunes_old_evidence_but_keeps_lines_a_pending_update_needs(
    db: Database,
) -> None:
    """Windows of notes older than the cut go; their lines wait for the profile updates."""
    store_note(db)
    assert db.write_sync(evidence.prune_evidence, WALL0) == 0
    assert db.write_sync(evidence.prune_evidence, WALL0 + 10) == 2
    assert db.read_sync(count, "evidence_windows") == 0
    assert db.read_sync(count, "note_lines") == 6  # two profile updates are still pending
    pending = db.read_sync(
        lambda conn: [int(r[0]) for r in conn.execute("SELECT id FROM profile_updates").fetchall()]
    )
    db.write_sync(mark_updates_applied, pending, WALL0 + 20)
    assert db.read_sync(count, "note_lines") == 0


def test_applied_updates_leave_the_lines_of_a_note_with_evidence(db: Database) -> None:
    """While a note keeps evidence, applying its profile updates does not drop its lines."""
    store_note(db)
    pending = db.read_sync(
        lambda conn: [int(r[0]) for r in conn.execute("SELECT id FROM profile_updates").fetchall()]
    )
    db.write_sync(mark_updates_applied, pending, WALL0 + 20)
    assert db.read_sync(count, "note_lines") == 6


def test_db_check_finds_evidence_of_another_guild(db: Database) -> None:
    """A window filed under a guild other than its note's is reported."""
    store_note(db)
    db.write_sync(lambda conn: conn.execute("UPDATE evidence_windows SET guild_id = 999"))
    problems = db.read_sync(evidence.evidence_problems)
    assert any("filed under guild 999" in problem for problem in problems)
