"""Guild isolation as a property: nothing stored for one guild reaches another's context."""

from __future__ import annotations

from dataclasses import dataclass

import hypothesis.strategies as st
import trio
from hypothesis import HealthCheck, given, settings
from trio.testing import MockClock

from tests.retrieval import WALL0, add_fact, add_lore, add_member, add_note, new_note
from vivy.clock import Clock
from vivy.llm.offline import OfflineLLM
from vivy.retrieval import ConversationMessage, RetrievalRequest, Retriever
from vivy.storage.sqlite.db import Connection, Database
from vivy.storage.sqlite.stores import sqlite_store

GUILDS = {1: "markaa", 2: "markbb"}
USERS = [1, 2, 3, 4, 5, 6]
WORDS = ["bento", "corgi", "postgres", "game", "night", "pizza", "tokyo", "rust", "vet", "owl"]
SECTIONS = ["bio", "interests", "skills", "opinions", "relationships", "other"]

words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4)


@dataclass(frozen=True)
class GuildData:
    """What one guild stores: notes, facts and lore (members come with notes and facts)."""

    notes: list[tuple[list[str], list[int], bool, int, int]]
    facts: list[tuple[int, str, list[str]]]
    lore: list[list[str]]


guild_data = st.builds(
    GuildData,
    notes=st.lists(
        st.tuples(
            words,
            st.lists(st.sampled_from(USERS), min_size=1, max_size=3, unique=True),
            st.booleans(),
            st.integers(0, 30),
            st.integers(10, 12),
        ),
        max_size=5,
    ),
    facts=st.lists(st.tuples(st.sampled_from(USERS), st.sampled_from(SECTIONS), words), max_size=6),
    lore=st.lists(words, max_size=2),
)

requests = st.tuples(
    st.lists(st.sampled_from([*WORDS, *GUILDS.values()]), min_size=1, max_size=6),
    st.lists(st.sampled_from(USERS), min_size=1, max_size=3),
    st.lists(st.sampled_from(USERS), max_size=4),
)


def store(conn: Connection, guild: int, data: GuildData) -> None:
    """Store a guild's data, every text and name carrying the guild's marker."""
    marker = GUILDS[guild]
    for i, (title, people, cluster, days, channel) in enumerate(data.notes):
        add_note(
            conn,
            new_note(
                guild,
                f"{' '.join(title)} {marker}title{i}",
                f"{' '.join(reversed(title))} {marker}summary{i}",
                channel_id=channel,
                note_type="topic_cluster" if cluster else "conversation",
                participants=[(user, f"{marker}name{user}") for user in people],
                topics=(f"{marker}topic",),
                entities=(f"{marker}entity",),
                at=WALL0 - days * 86400.0 - 60,
            ),
        )
    for i, (user, section, text) in enumerate(data.facts):
        add_member(conn, guild, user, f"{marker}name{user}")
        add_fact(conn, guild, user, section, f"{' '.join(text)} {marker}fact{i}", f"{marker}src")
    for i, text in enumerate(data.lore):
        add_lore(conn, guild, f"{' '.join(text)} {marker}lore{i}")


async def contexts(
    first: GuildData, second: GuildData, request: tuple[list[str], list[int], list[int]]
) -> dict[int, tuple[str, list[int]]]:
    """Build each guild's context and search for the same request; xml and hit guilds."""
    db = Database.open(":memory:", inline=True)
    try:
        db.write_sync(store, 1, first)
        db.write_sync(store, 2, second)
        retriever = Retriever(sqlite_store(db).search, OfflineLLM(), Clock.starting_at(WALL0))
        query_words, speakers, mentions = request
        query = " ".join(query_words)
        found: dict[int, tuple[str, list[int]]] = {}
        for guild, marker in GUILDS.items():
            conversation = tuple(
                ConversationMessage(user, f"speaker{user}", f"{query} {marker}")
                for user in speakers
            )
            context = await retriever.build_context(
                RetrievalRequest(guild, 10, query, conversation, tuple(mentions))
            )
            hits = await retriever.search_notes(guild, query, limit=20)
            found[guild] = (context.xml, [hit.note.guild_id for hit in hits])
        return found
    finally:
        db.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=guild_data, second=guild_data, request=requests)
def test_nothing_crosses_guilds(
    first: GuildData, second: GuildData, request: tuple[list[str], list[int], list[int]]
) -> None:
    """Contexts and searches for one guild never contain the other guild's marker strings."""
    found = trio.run(contexts, first, second, request, clock=MockClock(autojump_threshold=0))
    for guild, (xml, hit_guilds) in found.items():
        other = GUILDS[3 - guild]
        assert other not in xml
        assert set(hit_guilds) <= {guild}
