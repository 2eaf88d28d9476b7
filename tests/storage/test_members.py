"""The ``/memory`` commands' storage through the port, against a real database."""

from __future__ import annotations

from datetime import date

import pytest

from tests.storage import Probe
from vivy.memory.buffers import BufferedMessage, CloseReason
from vivy.memory.dates import note_date
from vivy.memory.facts import NewFact
from vivy.memory.members import BufferedRef, ForgetReport, GuildStatus, RememberOutcome
from vivy.memory.notes import NewNote, Participant
from vivy.state.profile import SECTION_CAP, ProfilePlan
from vivy.storage import members
from vivy.storage.port import Store

pytestmark = pytest.mark.anyio

WALL0 = 1772409600.0  # 2026-03-02T00:00:00Z
GUILD = 100
OTHER_GUILD = 200
ALEX = 11
SAM = 12
JO = 13


def line(message_id: int, author: int, name: str, text: str, **extra: object) -> BufferedMessage:
    """A buffered message created at WALL0 + its id."""
    return BufferedMessage(message_id, author, name, text, WALL0 + message_id, **extra)  # type: ignore[arg-type]


async def buffer(store: Store, guild: int, channel: int, *lines: BufferedMessage) -> int:
    """An open buffer holding ``lines``; returns its id."""
    buffer_id = await store.buffers.open_buffer(guild, channel, "general", WALL0, 1500.0)
    await store.buffers.append_messages(buffer_id, list(lines), WALL0 + 60)
    return buffer_id


async def note(
    store: Store,
    guild: int,
    channel: int,
    title: str,
    summary: str,
    people: list[tuple[int, str]],
    *lines: BufferedMessage,
) -> int:
    """A committed conversation note made from a closed buffer of ``lines``."""
    buffer_id = await buffer(store, guild, channel, *lines)
    await store.buffers.close_buffer(buffer_id, WALL0 + 100, CloseReason.INACTIVITY)
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
    note_id = await store.notes.commit_conversation_note(buffer_id, new)
    assert note_id is not None
    return note_id


async def remember(
    store: Store, guild: int, user: int, name: str, text: str, section: str = "bio"
) -> None:
    """Store a stated fact."""
    outcome = await store.members.remember_fact(
        guild, user, name, section, text, "stated by the member, Mar 2", WALL0
    )
    assert outcome is RememberOutcome.STORED


async def test_member_profile_lists_facts_with_sources(store: Store) -> None:
    """A member's profile has their name, active facts with labels, and their note count."""
    await remember(store, GUILD, ALEX, "Alex", "I live in Austin")
    await note(
        store, GUILD, 1, "Game night", "Alex and Sam planned a game night.", [(ALEX, "Alex")]
    )
    profile = await store.members.member_profile(GUILD, ALEX)
    assert profile.display_name == "Alex"
    assert not profile.opted_out
    assert [(f.text, f.source_kind, f.source_label) for f in profile.facts] == [
        ("I live in Austin", "stated", "stated by the member, Mar 2")
    ]
    assert profile.note_count == 1
    assert (await store.members.member_profile(OTHER_GUILD, ALEX)).facts == ()


async def test_remember_skips_duplicates_and_folds_a_full_section(
    store: Store, probe: Probe
) -> None:
    """The same fact twice is stored once; a full section retires its oldest fact."""
    await remember(store, GUILD, ALEX, "Alex", "I live in Austin")
    again = await store.members.remember_fact(
        GUILD, ALEX, "Alex", "bio", "I LIVE in Austin.", "x", WALL0
    )
    assert again is RememberOutcome.DUPLICATE
    for n in range(1, SECTION_CAP):
        await remember(store, GUILD, ALEX, "Alex", f"Fact number {n} about hobbies{n}")
    await remember(store, GUILD, ALEX, "Alex", "I moved to Denver")
    texts = [f.text for f in (await store.members.member_profile(GUILD, ALEX)).facts]
    assert len(texts) == SECTION_CAP
    assert "I live in Austin" not in texts and "I moved to Denver" in texts
    assert (
        await probe.count("SELECT version FROM user_profiles WHERE user_id = ?", ALEX)
        == SECTION_CAP + 1
    )


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
    assert members.fact_matches(fact, query) is expected


async def test_forget_facts_retires_matches_and_keeps_history(store: Store, probe: Probe) -> None:
    """Matching facts are invalidated with a reason; others stay active."""
    await remember(store, GUILD, ALEX, "Alex", "I live in Austin")
    await remember(store, GUILD, ALEX, "Alex", "I love RPG games", "interests")
    assert await store.members.forget_facts(GUILD, ALEX, "Austin", WALL0 + 5) == [
        "I live in Austin"
    ]
    rows = await probe.rows(
        "SELECT text, invalidated_at, invalidation_reason FROM profile_facts ORDER BY id"
    )
    assert rows == [
        ("I live in Austin", WALL0 + 5, "forgotten at the member's request"),
        ("I love RPG games", None, None),
    ]
    assert await store.members.forget_facts(GUILD, ALEX, "Austin", WALL0 + 6) == []


async def test_opting_out_deletes_buffered_messages_of_that_guild(
    store: Store, probe: Probe
) -> None:
    """Opting out persists the flag and deletes the member's messages in that guild only."""
    await buffer(store, GUILD, 1, line(1, ALEX, "Alex", "mine"), line(2, SAM, "Sam", "theirs"))
    await buffer(store, OTHER_GUILD, 2, line(3, ALEX, "Alex", "elsewhere"))
    refs = await store.members.set_opted_out(GUILD, ALEX, "Alex", True, WALL0)
    assert refs == [BufferedRef(1, 1)]
    assert await store.members.is_opted_out(GUILD, ALEX)
    assert not await store.members.is_opted_out(OTHER_GUILD, ALEX)
    texts = [r[0] for r in await probe.rows("SELECT text FROM buffer_messages")]
    assert sorted(texts) == ["elsewhere", "theirs"]
    assert await store.members.set_opted_out(GUILD, ALEX, "Alex", False, WALL0) == []
    assert not await store.members.is_opted_out(GUILD, ALEX)


async def test_guild_status_counts_one_guild(store: Store) -> None:
    """Status counts notes, facts, buffers, pending updates, lore and the last nightly job."""
    await note(store, GUILD, 1, "Game night", "Plans.", [(ALEX, "Alex"), (SAM, "Sam")])
    await buffer(store, GUILD, 2, line(10, SAM, "Sam", "hi"))
    await buffer(store, OTHER_GUILD, 3, line(11, SAM, "Sam", "hi"))
    await remember(store, GUILD, ALEX, "Alex", "I live in Austin")
    await store.members.add_lore(GUILD, ALEX, "Founded in 2019", WALL0)
    await store.jobs.record_pass(GUILD, date(2026, 3, 1), "clusters", WALL0)
    assert await store.members.guild_status(GUILD) == GuildStatus(
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


async def test_forget_member_removes_notes_facts_and_mentions(store: Store, probe: Probe) -> None:
    """Forget-me deletes the member's notes and facts, others' facts naming them, mentions."""
    shared = await note(
        store,
        GUILD,
        1,
        "Game night",
        "Alex and Sam planned a game night.",
        [(ALEX, "Alex"), (SAM, "Sam")],
        line(1, ALEX, "Alex", "I live in Austin"),
        line(2, SAM, "Sam", "I live in Boston"),
    )
    about = await note(store, GUILD, 2, "Chess club", "Jo said Alex wins every game.", [(JO, "Jo")])
    kept = await note(
        store, GUILD, 3, "Postgres", "Sam and Jo chose Postgres.", [(SAM, "Sam"), (JO, "Jo")]
    )
    await remember(store, GUILD, ALEX, "Alex", "I have a dog named Bento")
    await remember(store, GUILD, JO, "Jo", "I play chess with Alex")
    await remember(store, GUILD, SAM, "Sam", "I live in Boston")
    learnt = NewFact("bio", "Plays cello", "note", shared, "Game night, Mar 2")
    version = await store.profiles.profile_version(GUILD, SAM)
    assert await store.profiles.apply_plan(GUILD, SAM, version, ProfilePlan(added=[learnt]), WALL0)
    await buffer(
        store,
        GUILD,
        4,
        line(20, ALEX, "Alex", "still talking"),
        line(21, SAM, "Sam", f"hey <@{ALEX}> and <@!{ALEX}>", mentions=(ALEX,)),
    )
    report = await store.members.forget_member(GUILD, ALEX)
    assert (report.facts, report.notes, report.other_facts, report.pending_updates) == (1, 2, 1, 1)
    assert report.open_messages == (BufferedRef(4, 20),)
    notes = [r[0] for r in await probe.rows("SELECT id FROM interaction_notes")]
    assert notes == [kept]
    assert await probe.count("SELECT COUNT(*) FROM vec_notes") == 1
    assert await probe.notes_matching("Chess") == 0
    facts = await probe.rows("SELECT user_id, text, source_label FROM profile_facts ORDER BY id")
    assert facts == [
        (SAM, "I live in Boston", "stated by the member, Mar 2"),
        (SAM, "Plays cello", members.FORGOTTEN_SOURCE),
    ]
    rows = await probe.rows("SELECT author_id, text, mentions FROM buffer_messages")
    assert rows == [(SAM, "hey @someone and @someone", "[]")]
    for table in ("guild_members", "users", "user_profiles", "profile_updates"):
        column = "id" if table == "users" else "user_id"
        assert await probe.count(f"SELECT COUNT(*) FROM {table} WHERE {column} = ?", ALEX) == 0
    assert about not in notes and shared not in notes


async def test_forget_member_drops_closed_buffers_so_no_late_note_appears(
    store: Store, probe: Probe
) -> None:
    """A closed buffer holding the member's messages is deleted whole; its note never lands."""
    buffer_id = await buffer(
        store, GUILD, 1, line(1, ALEX, "Alex", "hi"), line(2, SAM, "Sam", "hello")
    )
    await store.buffers.close_buffer(buffer_id, WALL0 + 100, CloseReason.INACTIVITY)
    report = await store.members.forget_member(GUILD, ALEX)
    assert report.messages == 1 and report.open_messages == ()
    assert await store.buffers.load_buffer(buffer_id) is None
    assert await probe.count("SELECT COUNT(*) FROM buffer_messages") == 0


async def test_forget_member_is_scoped_to_one_guild(store: Store, probe: Probe) -> None:
    """Forgetting in one guild leaves the member's data in another, and their user row."""
    await remember(store, GUILD, ALEX, "Alex", "I live in Austin")
    await remember(store, OTHER_GUILD, ALEX, "Alex", "I live in Austin")
    await buffer(store, OTHER_GUILD, 9, line(1, ALEX, "Alex", "over here"))
    await store.members.forget_member(GUILD, ALEX)
    assert (
        await probe.count("SELECT COUNT(*) FROM profile_facts WHERE guild_id = ?", OTHER_GUILD) == 1
    )
    assert await probe.count("SELECT COUNT(*) FROM profile_facts WHERE guild_id = ?", GUILD) == 0
    assert await probe.count("SELECT COUNT(*) FROM buffer_messages") == 1
    assert await probe.count("SELECT COUNT(*) FROM users WHERE id = ?", ALEX) == 1


async def test_forget_member_keeps_a_bare_opt_out(store: Store, probe: Probe) -> None:
    """An opted-out member stays opted out after forget-me, with no name kept."""
    await store.members.set_opted_out(GUILD, ALEX, "Alex", True, WALL0)
    await store.members.forget_member(GUILD, ALEX)
    rows = await probe.rows("SELECT user_id, display_name, opted_out FROM guild_members")
    assert rows == [(ALEX, "", 1)]
    assert await probe.count("SELECT COUNT(*) FROM users") == 0


async def test_forget_member_without_any_data_is_harmless(store: Store) -> None:
    """Forgetting a member Vivy never saw changes nothing and reports zeros."""
    report = await store.members.forget_member(GUILD, ALEX)
    assert report == ForgetReport(0, 0, 0, 0, 0, ())


async def test_opted_out_members_lists_every_guilds_opt_outs(store: Store) -> None:
    """Opt-outs are listed by (guild, user); opting back in leaves the list."""
    await store.members.set_opted_out(GUILD, ALEX, "Alex", True, WALL0)
    await store.members.set_opted_out(OTHER_GUILD, SAM, "Sam", True, WALL0)
    await store.members.set_opted_out(GUILD, JO, "Jo", False, WALL0)
    assert await store.members.opted_out_members() == {(GUILD, ALEX), (OTHER_GUILD, SAM)}
    await store.members.set_opted_out(GUILD, ALEX, "Alex", False, WALL0)
    assert await store.members.opted_out_members() == {(OTHER_GUILD, SAM)}
