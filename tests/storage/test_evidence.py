"""Evidence storage through the port: windows, their indexes, edits, deletes, retention.

The evidence indexes are read through the search area (:meth:`find_notes`, :meth:`note_hits`),
so every test runs on both engines."""

from __future__ import annotations

import pytest

from tests.storage import Probe
from vivy.memory.buffers import BufferedMessage, CloseReason
from vivy.memory.evidence import windows_of
from vivy.memory.notes import NewNote, Participant
from vivy.storage.port import Store
from vivy.storage.search_types import NoteSearch, NoteSearchResult

pytestmark = pytest.mark.anyio

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


async def store_note(
    store: Store, guild_id: int = GUILD, channel_id: int = 1, base: int = 0
) -> int:
    """Commit a six-line conversation with its evidence windows, as the note writer does."""
    lines = [(base + m, author, name, text) for m, author, name, text in LINES]
    buffer_id = await store.buffers.open_buffer(guild_id, channel_id, "pets", WALL0, 1500.0)
    await store.buffers.append_messages(
        buffer_id,
        [BufferedMessage(m, a, n, t, WALL0 + m) for m, a, n, t in lines],
        WALL0 + 60,
    )
    await store.buffers.close_buffer(buffer_id, WALL0 + 3600, CloseReason.INACTIVITY)
    windows = windows_of([(m, n, t) for m, _, n, t in lines])
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
    found = await store.notes.commit_conversation_note(buffer_id, note)
    assert found is not None
    return found


async def count(probe: Probe, table: str) -> int:
    """Rows in ``table``."""
    return await probe.count(f"SELECT COUNT(*) FROM {table}")


async def embedded(probe: Probe) -> int:
    """Windows that still have their embedding."""
    return await probe.count("SELECT COUNT(*) FROM evidence_windows WHERE embedding IS NOT NULL")


async def find(
    store: Store, guild_id: int, *, terms: tuple[str, ...] = (), vector: list[float] | None = None
) -> NoteSearchResult:
    """One search of the guild's notes and their evidence, through the port."""
    (result,) = await store.search.find_notes(
        [NoteSearch(guild_id, vector, terms, None, candidates=10, keyword_candidates=10)]
    )
    return result


async def keyword(store: Store, guild_id: int, term: str) -> list[int]:
    """Note ids whose evidence windows match ``term`` in the guild."""
    found = await find(store, guild_id, terms=(term,))
    return [c.note_id for c in found.candidates if c.window_bm25 is not None]


async def window_ids(probe: Probe) -> list[int]:
    """Every evidence window's id, in message order."""
    return [int(str(r[0])) for r in await probe.rows("SELECT id FROM evidence_windows ORDER BY id")]


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
    found = windows_of(rows)
    assert [(w.first_message_id, w.last_message_id) for w in found] == spans
    assert found[0].text.startswith("Sam: line 1")


def test_blank_lines_are_left_out_of_windows() -> None:
    """Attachments-only messages (no text) take no place in a window."""
    assert windows_of([(1, "Sam", " "), (2, "Sam", "hi")])[0].first_message_id == 2
    assert windows_of([(1, "Sam", "")]) == []


async def test_note_commit_keeps_lines_windows_and_vectors(store: Store, probe: Probe) -> None:
    """A note's lines stay, its windows are keyword-indexed (stemmed) and embedded by guild."""
    note_id = await store_note(store)
    assert await count(probe, "note_lines") == 6
    assert await count(probe, "evidence_windows") == 2
    assert await embedded(probe) == 2
    assert await keyword(store, GUILD, "chewing") == [note_id]  # stemmed: chewing ~ chewed
    assert await keyword(store, OTHER_GUILD, "biscuit") == []
    first, second = await window_ids(probe)
    nearest = await find(store, GUILD, vector=unit(2))
    (candidate,) = nearest.candidates
    assert candidate.window_similarity == pytest.approx(1.0)
    assert nearest.windows == {note_id: (second, first)}  # the window along unit(2) first
    assert (await find(store, OTHER_GUILD, vector=unit(2))).candidates == ()
    assert await probe.evidence_problems() == []


async def test_a_delete_after_the_note_removes_the_line_and_its_words(
    store: Store, probe: Probe
) -> None:
    """A Discord delete of a noted message leaves neither its line, its words nor the
    embedding of any window that held it."""
    note_id = await store_note(store)
    assert await store.buffers.delete_message(3)
    assert await keyword(store, GUILD, "biscuit") == []
    assert await keyword(store, GUILD, "puppy") == [note_id]
    assert await count(probe, "note_lines") == 5
    assert await embedded(probe) == 0  # both windows held message 3: their vectors go
    assert not await store.buffers.delete_message(3)
    assert await probe.evidence_problems() == []


async def test_an_edit_after_the_note_rewrites_the_line(store: Store, probe: Probe) -> None:
    """A Discord edit of a noted message changes what is found and quoted."""
    note_id = await store_note(store)
    assert await store.buffers.edit_message(3, "we went with Waffles", WALL0 + 99)
    assert await keyword(store, GUILD, "biscuit") == []
    assert await keyword(store, GUILD, "waffles") == [note_id]
    _, lines = await store.search.note_hits(GUILD, [note_id], [note_id])
    assert [line.text for line in lines[note_id] if line.message_id == 3] == [
        "we went with Waffles"
    ]
    assert await probe.evidence_problems() == []


async def test_forget_me_and_opt_out_remove_a_members_lines(store: Store, probe: Probe) -> None:
    """Opting out removes the member's lines; the other member's stay searchable."""
    await store_note(store)
    await store_note(store, OTHER_GUILD, channel_id=2, base=100)
    await store.members.set_opted_out(GUILD, 7, "Sam", True, WALL0)
    assert await keyword(store, GUILD, "biscuit") == []
    assert await keyword(store, GUILD, "classic") != []
    assert await keyword(store, OTHER_GUILD, "biscuit") != []  # another guild is not touched
    await store.members.forget_member(OTHER_GUILD, 7)
    assert await keyword(store, OTHER_GUILD, "biscuit") == []
    assert await probe.evidence_problems() == []


async def test_retention_prunes_old_evidence_but_keeps_lines_a_pending_update_needs(
    store: Store, probe: Probe
) -> None:
    """Windows of notes older than the cut go; their lines wait for the profile updates."""
    await store_note(store)
    assert await store.evidence.prune_evidence(WALL0) == 0
    assert await store.evidence.prune_evidence(WALL0 + 10) == 2
    assert await count(probe, "evidence_windows") == 0
    assert await count(probe, "note_lines") == 6  # two profile updates are still pending
    pending = [update.id for update in await store.profiles.pending_updates()]
    await store.profiles.mark_updates_applied(pending, WALL0 + 20)
    assert await count(probe, "note_lines") == 0
    assert await probe.evidence_problems() == []


async def test_applied_updates_leave_the_lines_of_a_note_with_evidence(
    store: Store, probe: Probe
) -> None:
    """While a note keeps evidence, applying its profile updates does not drop its lines."""
    await store_note(store)
    pending = [update.id for update in await store.profiles.pending_updates()]
    await store.profiles.mark_updates_applied(pending, WALL0 + 20)
    assert await count(probe, "note_lines") == 6


async def test_db_check_finds_evidence_of_another_guild(store: Store, probe: Probe) -> None:
    """A window filed under a guild other than its note's is reported."""
    await store_note(store)
    await probe.execute("UPDATE evidence_windows SET guild_id = 999")
    problems = await probe.evidence_problems()
    assert any("filed under guild 999" in problem for problem in problems)


@pytest.mark.engines("postgres")
async def test_db_check_finds_keyword_postings_that_differ_from_their_text(
    store: Store, probe: Probe
) -> None:
    """PostgreSQL's postings (kept by triggers) are checked against the text they index: a
    lost posting and a stray one are both reported, by the row they belong to."""
    note_id = await store_note(store)
    first, _ = await window_ids(probe)
    assert await probe.evidence_problems() == []
    await probe.execute(
        "DELETE FROM note_postings WHERE note_id = ? AND lexeme ="
        " (SELECT min(lexeme) FROM note_postings WHERE note_id = ?)",
        note_id,
        note_id,
    )
    await probe.execute("UPDATE window_postings SET tf = tf + 1 WHERE window_id = ?", first)
    assert await probe.evidence_problems() == [
        f"keyword postings of note {note_id} differ from its text",
        f"keyword postings of evidence window {first} differ from its text",
    ]


async def test_windows_without_embeddings_are_listed_then_embedded(
    store: Store, probe: Probe
) -> None:
    """An edit drops the embeddings of the windows holding the line; the re-embed pass lists
    them with their lines and stores new vectors."""
    await store_note(store)
    assert await store.evidence.windows_to_embed(10) == []
    assert await store.buffers.edit_message(5, "he chewed my other shoe", WALL0 + 99)
    waiting = await store.evidence.windows_to_embed(10)
    assert len(waiting) == 1 and "other shoe" in waiting[0].text
    assert waiting[0].note_vector is not None and len(waiting[0].note_vector) == len(unit(9))
    assert await embedded(probe) == 1
    await store.evidence.set_window_embeddings([(waiting[0].id, unit(9))])
    assert await store.evidence.windows_to_embed(10) == []
    assert await embedded(probe) == 2
    assert await count(probe, "note_lines") == 6
