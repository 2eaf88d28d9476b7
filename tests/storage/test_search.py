"""The search area through the port, on every engine: note search stays in its guild before
any limit, finds notes by vector, keyword, evidence, time and name, and the context reads
(opt-outs, people, member cards, the memory version) name the guild they read."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tests.storage import Probe, SqliteProbe
from vivy.memory.buffers import BufferedMessage, CloseReason
from vivy.memory.dates import note_date
from vivy.memory.evidence import windows_of
from vivy.memory.notes import NewNote, Participant
from vivy.storage.port import Store
from vivy.storage.search_types import Chosen, NoteSearch, NoteSearchResult, TimeRange

pytestmark = pytest.mark.anyio

WALL0 = 1772409600.0  # 2026-03-02 00:00 UTC
DAY = 86400.0
GUILD = 100
OTHER_GUILD = 200
DIM = 768


def vector(*weights: float) -> list[float]:
    """A unit vector with ``weights`` on the first dimensions."""
    values = list(weights) + [0.0] * (DIM - len(weights))
    norm = sum(x * x for x in values) ** 0.5
    return [x / norm for x in values]


#: The question's vector.
QUERY = vector(1.0)

_messages = iter(range(1, 1_000_000))


async def add_note(
    store: Store,
    guild_id: int,
    title: str,
    *,
    embedding: list[float],
    summary: str = "They talked.",
    lines: tuple[str, ...] = ("hello there",),
    people: tuple[tuple[int, str], ...] = ((7, "Sam"),),
    at: float = WALL0,
) -> int:
    """Commit a conversation note of ``guild_id`` with one evidence window of ``lines``
    (embedded like the note), as the note writer does; returns its id."""
    channel = guild_id + 1
    ids = [next(_messages) for _ in lines]
    author, name = people[0]
    buffer_id = await store.buffers.open_buffer(guild_id, channel, "general", at, 1500.0)
    await store.buffers.append_messages(
        buffer_id,
        [
            BufferedMessage(m, author, name, text, at + i)
            for i, (m, text) in enumerate(zip(ids, lines, strict=True))
        ],
        at + len(lines),
    )
    await store.buffers.close_buffer(buffer_id, at + 3600, CloseReason.INACTIVITY)
    windows = windows_of([(m, name, text) for m, text in zip(ids, lines, strict=True)])
    note = NewNote(
        guild_id=guild_id,
        channel_id=channel,
        channel_name="general",
        note_type="conversation",
        title=title,
        summary=summary,
        topics=(),
        decisions=(),
        open_questions=(),
        entities=(),
        participants=tuple(Participant(u, n, 1) for u, n in people),
        note_date=note_date(at),
        quality="ok",
        model="test",
        embedding=embedding,
        created_at=at + 3600,
        started_at=at,
        ended_at=at + len(lines),
        windows=tuple(windows),
        window_embeddings=tuple(embedding for _ in windows),
    )
    note_id = await store.notes.commit_conversation_note(buffer_id, note)
    assert note_id is not None
    return note_id


def search(guild_id: int, **options: Any) -> NoteSearch:
    """A search of the guild for :data:`QUERY` and "biscuit" with small candidate counts
    (``options`` override any field)."""
    base = NoteSearch(
        guild_id,
        QUERY,
        ("biscuit",),
        None,
        candidates=3,
        keyword_candidates=3,
        window_candidates=3,
        time_candidates=3,
    )
    return replace(base, **options)


async def test_another_guilds_closer_notes_never_appear(store: Store) -> None:
    """Twenty notes of another guild that match the question better by vector, keyword,
    evidence, time and name cannot push out, or stand in for, the guild's one farther note."""
    theirs = [
        await add_note(
            store,
            OTHER_GUILD,
            f"Biscuit the puppy {i}",
            embedding=QUERY,
            summary="Biscuit biscuit biscuit.",
            lines=("Biscuit chewed a shoe", "biscuit again"),
        )
        for i in range(20)
    ]
    mine = await add_note(
        store,
        GUILD,
        "Weekend plans",
        embedding=vector(0.3, 1.0),
        summary="Maybe a biscuit.",
        lines=("we might bake a biscuit",),
    )
    (found,) = await store.search.find_notes(
        [
            search(
                GUILD,
                time=TimeRange(WALL0 - DAY, WALL0 + DAY),
                name_grams=("sam",),
            )
        ]
    )
    (candidate,) = found.candidates
    assert candidate.note_id == mine and not found.vector_failed
    assert candidate.similarity == pytest.approx(0.3 / (1.09**0.5), abs=1e-4)
    assert candidate.bm25 is not None and candidate.bm25 > 0
    assert candidate.window_bm25 is not None and candidate.window_similarity is not None
    assert candidate.time_distance_s == 0.0 and candidate.named and found.named == {7}
    assert candidate.terms == frozenset({"biscuit"}) and candidate.coverage == 1.0
    assert set(found.windows) == {mine}
    notes, _ = await store.search.note_hits(GUILD, [*theirs, mine], [])
    assert [note.id for note in notes] == [mine]


async def test_each_search_finds_notes_its_own_way(store: Store) -> None:
    """A note is found by vector only, by keyword only, by its evidence only or by its time
    only, and each candidate says which search found it."""
    by_vector = await add_note(store, GUILD, "Garden", embedding=QUERY, lines=("tomatoes",))
    by_title = await add_note(store, GUILD, "Biscuit", embedding=vector(0.0, 1.0))
    by_evidence = await add_note(
        store, GUILD, "Pets", embedding=vector(0.0, 0.0, 1.0), lines=("we named him Biscuit",)
    )
    by_time = await add_note(
        store, GUILD, "Later", embedding=vector(0.0, 0.0, 0.0, 1.0), at=WALL0 + 5 * DAY
    )
    (found,) = await store.search.find_notes(
        [
            search(
                GUILD,
                candidates=1,
                time=TimeRange(WALL0 + 5 * DAY, WALL0 + 6 * DAY),
            )
        ]
    )
    by_id = {c.note_id: c for c in found.candidates}
    assert set(by_id) == {by_vector, by_title, by_evidence, by_time}
    assert by_id[by_vector].similarity == pytest.approx(1.0)
    assert by_id[by_vector].bm25 is None and by_id[by_vector].window_bm25 is None
    assert by_id[by_title].bm25 is not None and by_id[by_title].similarity is None
    assert by_id[by_evidence].window_bm25 is not None and by_id[by_evidence].bm25 is None
    assert by_id[by_evidence].terms == frozenset({"biscuit"})
    assert by_id[by_time].time_distance_s == 0.0 and by_id[by_time].terms == frozenset()
    assert by_id[by_vector].time_distance_s == pytest.approx(5 * DAY - 1)
    assert set(found.term_weights) == {"biscuit"}
    assert by_id[by_title].text.startswith("Biscuit They talked.")


async def test_a_search_of_a_type_without_evidence_skips_the_windows(store: Store) -> None:
    """Topic clusters have no evidence: a search of them reads no window, and finds no
    conversation."""
    await add_note(store, GUILD, "Biscuit", embedding=QUERY, lines=("biscuit",))
    (found,) = await store.search.find_notes([search(GUILD, note_type="topic_cluster")])
    assert found.candidates == () and found.windows == {}


async def test_searches_are_answered_in_order(store: Store) -> None:
    """One call runs several searches and answers each, in the order asked."""
    mine = await add_note(store, GUILD, "Biscuit", embedding=QUERY)
    theirs = await add_note(store, OTHER_GUILD, "Biscuit", embedding=QUERY)
    found = await store.search.find_notes([search(OTHER_GUILD), search(GUILD), search(3)])
    assert [[c.note_id for c in r.candidates] for r in found] == [[theirs], [mine], []]


async def test_find_and_load_chooses_on_the_results_and_loads_only_the_guilds(
    store: Store,
) -> None:
    """One call searches, lets the caller choose from the results, and loads what it chose:
    the same results as :meth:`find_notes`, the chosen value as returned, the chosen notes
    of the guild only (another guild's id is dropped) and their evidence lines (never
    another guild's)."""
    mine = await add_note(store, GUILD, "Biscuit", embedding=QUERY, lines=("biscuit", "yes"))
    theirs = await add_note(store, OTHER_GUILD, "Biscuit", embedding=QUERY)
    seen: list[list[NoteSearchResult]] = []

    def choose(results: list[NoteSearchResult]) -> Chosen[str]:
        seen.append(results)
        (result,) = results
        assert mine in result.windows
        return Chosen("picked", (theirs, mine), (theirs, mine))

    loaded = await store.search.find_and_load(GUILD, [search(GUILD)], choose)
    assert list(loaded.results) == seen[0] == await store.search.find_notes([search(GUILD)])
    assert loaded.value == "picked"
    assert [note.id for note in loaded.notes] == [mine]
    assert list(loaded.lines) == [mine]
    assert [line.text for line in loaded.lines[mine]] == ["biscuit", "yes"]


async def test_an_opted_out_member_is_hidden_in_their_guild_only(store: Store) -> None:
    """A member who opted out is reported as such where they opted out, and nowhere else."""
    await add_note(store, GUILD, "Pets", embedding=QUERY, people=((7, "Sam"), (8, "Maya")))
    await add_note(store, OTHER_GUILD, "Pets", embedding=QUERY, people=((7, "Sam"),))
    assert await store.search.opted_out(GUILD, [7, 8]) == set()
    await store.members.set_opted_out(GUILD, 7, "Sam", True, WALL0 + DAY)
    assert await store.search.opted_out(GUILD, [7, 8, 9]) == {7}
    assert await store.search.opted_out(OTHER_GUILD, [7]) == set()
    card = await store.search.member_card(GUILD, 7, 5)
    assert card is not None and card.opted_out
    other = await store.search.member_card(OTHER_GUILD, 7, 5)
    assert other is not None and not other.opted_out


async def test_memory_version_changes_when_a_note_fact_or_lore_is_added(store: Store) -> None:
    """The fingerprint moves with every note, fact and piece of lore of the guild, and not
    with another guild's facts."""
    versions = [await store.search.memory_version(GUILD)]
    await add_note(store, GUILD, "Pets", embedding=QUERY)
    versions.append(await store.search.memory_version(GUILD))
    await store.members.remember_fact(GUILD, 7, "Sam", "bio", "Lives in Denver", "stated", WALL0)
    versions.append(await store.search.memory_version(GUILD))
    await store.members.add_lore(GUILD, 7, "The server started in 2020", WALL0)
    versions.append(await store.search.memory_version(GUILD))
    assert len(set(versions)) == 4
    await store.members.remember_fact(OTHER_GUILD, 7, "Sam", "bio", "Likes tea", "stated", WALL0)
    assert await store.search.memory_version(GUILD) == versions[-1]


async def test_people_reads_stay_in_the_guild(store: Store) -> None:
    """Names, facts, recent notes and lore come from the guild asked about only."""
    await add_note(store, GUILD, "Pets", embedding=QUERY, people=((7, "Sam"),))
    await add_note(store, OTHER_GUILD, "Elsewhere", embedding=QUERY, people=((7, "Samuel"),))
    await store.members.remember_fact(GUILD, 7, "Sam", "bio", "Lives in Denver", "stated", WALL0)
    await store.members.remember_fact(OTHER_GUILD, 7, "Samuel", "bio", "Likes tea", "stated", WALL0)
    await store.members.add_lore(GUILD, 7, "Founded in 2020", WALL0)
    await store.members.add_lore(OTHER_GUILD, 7, "Another server", WALL0)
    read = await store.search.people(
        GUILD, [7, 9], [7], since=WALL0 - DAY, activity_limit=3, lore_limit=5
    )
    assert read.names == {7: "Sam"}
    assert [fact.text for fact in read.facts[7]] == ["Lives in Denver"] and read.facts[9] == []
    assert read.activity == {7: [("2026-03-02", "Pets")]}
    assert [item.text for item in read.lore] == ["Founded in 2020"]
    card = await store.search.member_card(GUILD, 7, 5)
    assert card is not None and [title for _, _, title in card.recent_notes] == ["Pets"]
    assert await store.search.member_card(GUILD, 9, 5) is None


async def test_a_failing_vector_search_is_reported_and_keywords_still_serve(store: Store) -> None:
    """A question embedded at another dimension than the notes fails the vector search only:
    the result says so, and the keyword search still finds the note."""
    mine = await add_note(store, GUILD, "Biscuit", embedding=QUERY)
    (found,) = await store.search.find_notes([search(GUILD, vector=[1.0] * 4)])
    assert found.vector_failed
    assert [(c.note_id, c.similarity, c.window_similarity) for c in found.candidates] == [
        (mine, None, None)
    ]
    assert found.candidates[0].bm25 is not None


async def test_tidying_the_keyword_indexes_keeps_every_search_result(
    store: Store, probe: Probe
) -> None:
    """The nightly upkeep of the keyword indexes changes how they are stored, never what a
    search finds: after it, every search gives the same candidates and scores. On SQLite
    it merges the FTS5 segments that notes written one at a time left into one per index,
    in steps, until a step finds nothing to merge; PostgreSQL has nothing to merge."""
    for i in range(12):
        await add_note(
            store,
            GUILD,
            f"Biscuit day {i}",
            embedding=vector(1.0, i / 12),
            lines=(f"biscuit number {i} was great", f"other talk {i}"),
        )
    searches = [search(GUILD), search(GUILD, terms=("biscuit", "great", "talk"))]
    before = await store.search.find_notes(searches)
    steps = 0
    while await store.jobs.tidy_keyword_indexes():
        steps += 1
    assert await store.search.find_notes(searches) == before
    assert not await store.jobs.tidy_keyword_indexes()
    if isinstance(probe, SqliteProbe):
        assert steps >= 1
        for index in ("notes_fts", "evidence_fts"):
            assert await probe.count(f"SELECT count(DISTINCT segid) FROM {index}_idx") == 1
    else:
        assert steps == 0


async def test_a_term_in_no_note_counts_against_coverage(store: Store) -> None:
    """A question's word that no note or window holds still weighs in the gate's coverage, at
    least as much as any word that is there: "biscuit xylophone" is at most half covered by a
    biscuit note, where "biscuit" alone is covered whole; the ranking's coverage, of the
    searched terms, is whole in both."""
    mine = await add_note(
        store, GUILD, "Biscuit", embedding=QUERY, lines=("Biscuit chewed a shoe",)
    )
    both, alone = await store.search.find_notes(
        [search(GUILD, terms=("biscuit", "xylophone")), search(GUILD)]
    )
    (half,) = both.candidates
    (whole,) = alone.candidates
    assert half.note_id == whole.note_id == mine
    assert half.terms == whole.terms == frozenset({"biscuit"})
    assert half.coverage == whole.coverage == 1.0
    assert half.question_coverage is not None and 0.0 < half.question_coverage <= 0.5
    assert whole.question_coverage == 1.0
