"""The SQL behind the ``/memory`` commands, against a real database."""

from __future__ import annotations

import pytest

from vivy.state.buffer import BufferedMessage, CloseReason
from vivy.state.profile import SECTION_CAP
from vivy.storage import buffers
from vivy.storage import members as store
from vivy.storage.db import Database
from vivy.storage.notes import NewNote, Participant, commit_conversation_note, note_date

WALL0 = 1772409600.0  # 2026-03-02T00:00:00Z
GUILD = 100
OTHER_GUILD = 200
ALEX = 11
SAM = 12
JO = 13


def line(message_id: int, author: int, name: str, text: str, **extra: object) -> BufferedMessage:
    """A buffered message created at WALL0 + its id."""
    return BufferedMessage(message_id, author, name, text, WALL0 + message_id, **extra)  # type: ignore[arg-type]


def buffer(db: Database, guild: int, channel: int, *lines: BufferedMessage) -> int:
    """An open buffer holding ``lines``; returns its id."""
    buffer_id = db.write_sync(buffers.open_buffer, guild, channel, "general", WALL0, 1500.0)
    db.write_sync(buffers.append_messages, buffer_id, list(lines), WALL0 + 60)
    return buffer_id


def note(
    db: Database,
    guild: int,
    channel: int,
    title: str,
    summary: str,
    people: list[tuple[int, str]],
    *lines: BufferedMessage,
) -> int:
    """A committed conversation note made from a closed buffer of ``lines``."""
    buffer_id = buffer(db, guild, channel, *lines)
    db.write_sync(buffers.close_buffer, buffer_id, WALL0 + 100, CloseReason.INACTIVITY)
    new = NewNote(
        guild_id=guild,
        channel_id=channel,
        channel_name="general",
        note_type="conversation",
        title=title,
        summary=summary,
        topics=(),
        decisions=(),
        open_questions=(),
        entities=(),
        participants=tuple(Participant(user, name, 1) for user, name in people),
        note_date=note_date(WALL0),
        quality="offline",
        model="test",
        embedding=[1.0] + [0.0] * 767,
        created_at=WALL0 + 100,
    )
    note_id = db.write_sync(commit_conversation_note, buffer_id, new)
    assert note_id is not None
    return note_id


def remember(
    db: Database, guild: int, user: int, name: str, text: str, section: str = "bio"
) -> None:
    """Store a stated fact."""
    outcome = db.write_sync(
        store.remember_fact, guild, user, name, section, text, "stated by the member, Mar 2", WALL0
    )
    assert outcome is store.RememberOutcome.STORED


def count(db: Database, sql: str, *args: object) -> int:
    """The single number ``sql`` selects."""
    return int(db.read_sync(lambda conn: conn.execute(sql, args).fetchone()[0]))


def test_member_profile_lists_facts_with_sources(db: Database) -> None:
    """A member's profile has their name, active facts with labels, and their note count."""
    remember(db, GUILD, ALEX, "Alex", "I live in Austin")
    note(db, GUILD, 1, "Game night", "Alex and Sam planned a game night.", [(ALEX, "Alex")])
    profile = db.read_sync(store.member_profile, GUILD, ALEX)
    assert profile.display_name == "Alex"
    assert not profile.opted_out
    assert [(f.text, f.source_kind, f.source_label) for f in profile.facts] == [
        ("I live in Austin", "stated", "stated by the member, Mar 2")
    ]
    assert profile.note_count == 1
    assert db.read_sync(store.member_profile, OTHER_GUILD, ALEX).facts == ()


def test_remember_skips_duplicates_and_folds_a_full_section(db: Database) -> None:
    """The same fact twice is stored once; a full section retires its oldest fact."""
    remember(db, GUILD, ALEX, "Alex", "I live in Austin")
    again = db.write_sync(
        store.remember_fact, GUILD, ALEX, "Alex", "bio", "I LIVE in Austin.", "x", WALL0
    )
    assert again is store.RememberOutcome.DUPLICATE
    for n in range(1, SECTION_CAP):
        remember(db, GUILD, ALEX, "Alex", f"Fact number {n} about hobbies{n}")
    remember(db, GUILD, ALEX, "Alex", "I moved to Denver")
    texts = [f.text for f in db.read_sync(store.member_profile, GUILD, ALEX).facts]
    assert len(texts) == SECTION_CAP
    assert "I live in Austin" not in texts and "I moved to Denver" in texts
    assert count(db, "SELECT version FROM user_profiles WHERE user_id = ?", ALEX) == SECTION_CAP + 1


@pytest.mark.parametrize(
    ("fact", "query", "expected"),
    [
        ("I live in Austin", "austin", True),
        ("I live in Austin", "I LIVE IN AUSTIN!", True),
        ("Has a dog named Bento", "my dog Bento", True),
        ("Has a dog named Bento", "cats", False),
        ("Plays chess", "", False),
        ("Plays chess", "the and of", False),
    ],
)
def test_fact_matches(fact: str, query: str, expected: bool) -> None:
    """A query matches by substring either way, or by half of its content words."""
    assert store.fact_matches(fact, query) is expected


def test_forget_facts_retires_matches_and_keeps_history(db: Database) -> None:
    """Matching facts are invalidated with a reason; others stay active."""
    remember(db, GUILD, ALEX, "Alex", "I live in Austin")
    remember(db, GUILD, ALEX, "Alex", "I love RPG games", "interests")
    assert db.write_sync(store.forget_facts, GUILD, ALEX, "Austin", WALL0 + 5) == [
        "I live in Austin"
    ]
    rows = db.read_sync(
        lambda conn: conn.execute(
            "SELECT text, invalidated_at, invalidation_reason FROM profile_facts ORDER BY id"
        ).fetchall()
    )
    assert [tuple(r) for r in rows] == [
        ("I live in Austin", WALL0 + 5, "forgotten at the member's request"),
        ("I love RPG games", None, None),
    ]
    assert db.write_sync(store.forget_facts, GUILD, ALEX, "Austin", WALL0 + 6) == []


def test_opting_out_deletes_buffered_messages_of_that_guild(db: Database) -> None:
    """Opting out persists the flag and deletes the member's messages in that guild only."""
    buffer(db, GUILD, 1, line(1, ALEX, "Alex", "mine"), line(2, SAM, "Sam", "theirs"))
    buffer(db, OTHER_GUILD, 2, line(3, ALEX, "Alex", "elsewhere"))
    refs = db.write_sync(store.set_opted_out, GUILD, ALEX, "Alex", True, WALL0)
    assert refs == [store.BufferedRef(1, 1)]
    assert db.read_sync(store.is_opted_out, GUILD, ALEX)
    assert not db.read_sync(store.is_opted_out, OTHER_GUILD, ALEX)
    texts = db.read_sync(lambda c: [r[0] for r in c.execute("SELECT text FROM buffer_messages")])
    assert sorted(texts) == ["elsewhere", "theirs"]
    assert db.write_sync(store.set_opted_out, GUILD, ALEX, "Alex", False, WALL0) == []
    assert not db.read_sync(store.is_opted_out, GUILD, ALEX)


def test_guild_status_counts_one_guild(db: Database) -> None:
    """Status counts notes, facts, buffers, pending updates, lore and the last nightly job."""
    note(db, GUILD, 1, "Game night", "Plans.", [(ALEX, "Alex"), (SAM, "Sam")])
    buffer(db, GUILD, 2, line(10, SAM, "Sam", "hi"))
    buffer(db, OTHER_GUILD, 3, line(11, SAM, "Sam", "hi"))
    remember(db, GUILD, ALEX, "Alex", "I live in Austin")
    db.write_sync(store.add_lore, GUILD, ALEX, "Founded in 2019", WALL0)
    db.write_sync(
        lambda c: c.execute(
            "INSERT INTO memory_job_log VALUES (?, '2026-03-01', 'clusters', ?)", (GUILD, WALL0)
        )
    )
    assert db.read_sync(store.guild_status, GUILD) == store.GuildStatus(
        conversation_notes=1,
        topic_clusters=0,
        active_facts=1,
        members_with_facts=1,
        open_buffers=1,
        closed_buffers=0,
        pending_updates=2,
        lore=1,
        last_nightly_job=WALL0,
    )


def test_forget_member_removes_notes_facts_and_mentions(db: Database) -> None:
    """Forget-me deletes the member's notes and facts, others' facts naming them, mentions."""
    shared = note(
        db,
        GUILD,
        1,
        "Game night",
        "Alex and Sam planned a game night.",
        [(ALEX, "Alex"), (SAM, "Sam")],
        line(1, ALEX, "Alex", "I live in Austin"),
        line(2, SAM, "Sam", "I live in Boston"),
    )
    about = note(db, GUILD, 2, "Chess club", "Jo said Alex wins every game.", [(JO, "Jo")])
    kept = note(db, GUILD, 3, "Postgres", "Sam and Jo chose Postgres.", [(SAM, "Sam"), (JO, "Jo")])
    remember(db, GUILD, ALEX, "Alex", "I have a dog named Bento")
    remember(db, GUILD, JO, "Jo", "I play chess with Alex")
    remember(db, GUILD, SAM, "Sam", "I live in Boston")
    db.write_sync(
        lambda c: c.execute(
            "INSERT INTO profile_facts (guild_id, user_id, section, text, source_kind,"
            " source_note_id, source_label, created_at) VALUES (?, ?, 'bio', 'Plays cello',"
            " 'note', ?, 'Game night, Mar 2', ?)",
            (GUILD, SAM, shared, WALL0),
        )
    )
    buffer(
        db,
        GUILD,
        4,
        line(20, ALEX, "Alex", "still talking"),
        line(21, SAM, "Sam", f"hey <@{ALEX}> and <@!{ALEX}>", mentions=(ALEX,)),
    )
    report = db.write_sync(store.forget_member, GUILD, ALEX)
    assert (report.facts, report.notes, report.other_facts, report.pending_updates) == (1, 2, 1, 1)
    assert report.open_messages == (store.BufferedRef(4, 20),)
    notes = db.read_sync(lambda c: [r[0] for r in c.execute("SELECT id FROM interaction_notes")])
    assert notes == [kept]
    assert count(db, "SELECT COUNT(*) FROM vec_notes") == 1
    assert count(db, "SELECT COUNT(*) FROM notes_fts WHERE notes_fts MATCH 'Chess'") == 0
    facts = db.read_sync(
        lambda c: [
            tuple(r) for r in c.execute("SELECT user_id, text, source_label FROM profile_facts")
        ]
    )
    assert facts == [
        (SAM, "I live in Boston", "stated by the member, Mar 2"),
        (SAM, "Plays cello", store.FORGOTTEN_SOURCE),
    ]
    rows = db.read_sync(
        lambda c: [
            tuple(r) for r in c.execute("SELECT author_id, text, mentions FROM buffer_messages")
        ]
    )
    assert rows == [(SAM, "hey @someone and @someone", "[]")]
    for table in ("guild_members", "users", "user_profiles", "profile_updates"):
        column = "id" if table == "users" else "user_id"
        assert count(db, f"SELECT COUNT(*) FROM {table} WHERE {column} = ?", ALEX) == 0
    assert about not in notes and shared not in notes


def test_forget_member_drops_closed_buffers_so_no_late_note_appears(db: Database) -> None:
    """A closed buffer holding the member's messages is deleted whole; its note never lands."""
    buffer_id = buffer(db, GUILD, 1, line(1, ALEX, "Alex", "hi"), line(2, SAM, "Sam", "hello"))
    db.write_sync(buffers.close_buffer, buffer_id, WALL0 + 100, CloseReason.INACTIVITY)
    report = db.write_sync(store.forget_member, GUILD, ALEX)
    assert report.messages == 1 and report.open_messages == ()
    assert db.read_sync(buffers.load_buffer, buffer_id) is None
    assert count(db, "SELECT COUNT(*) FROM buffer_messages") == 0


def test_forget_member_is_scoped_to_one_guild(db: Database) -> None:
    """Forgetting in one guild leaves the member's data in another, and their user row."""
    remember(db, GUILD, ALEX, "Alex", "I live in Austin")
    remember(db, OTHER_GUILD, ALEX, "Alex", "I live in Austin")
    buffer(db, OTHER_GUILD, 9, line(1, ALEX, "Alex", "over here"))
    db.write_sync(store.forget_member, GUILD, ALEX)
    assert count(db, "SELECT COUNT(*) FROM profile_facts WHERE guild_id = ?", OTHER_GUILD) == 1
    assert count(db, "SELECT COUNT(*) FROM profile_facts WHERE guild_id = ?", GUILD) == 0
    assert count(db, "SELECT COUNT(*) FROM buffer_messages") == 1
    assert count(db, "SELECT COUNT(*) FROM users WHERE id = ?", ALEX) == 1


def test_forget_member_keeps_a_bare_opt_out(db: Database) -> None:
    """An opted-out member stays opted out after forget-me, with no name kept."""
    db.write_sync(store.set_opted_out, GUILD, ALEX, "Alex", True, WALL0)
    db.write_sync(store.forget_member, GUILD, ALEX)
    rows = db.read_sync(
        lambda c: [
            tuple(r)
            for r in c.execute("SELECT user_id, display_name, opted_out FROM guild_members")
        ]
    )
    assert rows == [(ALEX, "", 1)]
    assert count(db, "SELECT COUNT(*) FROM users") == 0


def test_forget_member_without_any_data_is_harmless(db: Database) -> None:
    """Forgetting a member Vivy never saw changes nothing and reports zeros."""
    report = db.write_sync(store.forget_member, GUILD, ALEX)
    assert report == store.ForgetReport(0, 0, 0, 0, 0, ())
