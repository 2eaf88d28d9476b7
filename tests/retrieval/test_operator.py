"""The operator API's store: the replies' note search and members' profiles, as JSON."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from prometheus_client import CollectorRegistry

from tests.retrieval import WALL0, add_fact, add_member, add_note, new_note
from tests.web.threaded import ThreadedServer as MetricsServer
from vivy.clock import Clock
from vivy.errors import StorageError
from vivy.llm.offline import OfflineLLM
from vivy.retrieval import OperatorStore, Retriever
from vivy.storage.engines import open_store
from vivy.storage.sqlite.db import Connection, Database

pytestmark = pytest.mark.anyio

GUILD = 100
OTHER = 200

#: The keys of a search hit, as the operator API has always answered them.
HIT_KEYS = {
    "note_id",
    "guild_id",
    "channel_id",
    "channel_name",
    "note_type",
    "date",
    "title",
    "summary",
    "topics",
    "entities",
    "participants",
    "score",
    "keyword_score",
}


def seed(conn: Connection) -> dict[str, int]:
    """Notes in two guilds, a profile, and a member without facts."""
    ids = {
        "bento": add_note(
            conn,
            new_note(
                GUILD,
                "Bento learns tricks",
                "Sam's corgi Bento learned to roll over",
                participants=((2, "Sam"), (3, "Maya")),
            ),
        ),
        "hike": add_note(
            conn,
            new_note(GUILD, "Weekend hike", "Maya and Alex hiked up Eagle Peak on Saturday"),
        ),
        "other": add_note(
            conn,
            new_note(OTHER, "Bento elsewhere", "Another guild's Bento", participants=((2, "S"),)),
        ),
    }
    add_fact(conn, GUILD, 2, "relationships", "Dog named Bento", "Bento learns tricks, Feb 28")
    add_fact(conn, GUILD, 2, "bio", "Lives in Chicago", "Intro, Feb 1", kind="stated")
    add_fact(conn, OTHER, 2, "bio", "OTHERGUILDFACT", "Elsewhere, Feb 7")
    add_member(conn, GUILD, 9, "Lurker")
    return ids


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    """A seeded database file and its note ids."""
    path = tmp_path / "vivy.db"
    db = Database.open(path, inline=True)
    ids = db.write_sync(seed)
    db.close()
    return path, ids


@asynccontextmanager
async def operator_over(
    path: Path, *, inline: bool = True
) -> AsyncIterator[tuple[OperatorStore, Retriever]]:
    """An operator store over the database ``path`` (read-only) and the retriever it
    searches with, made in the running event loop as the app makes them."""
    store = open_store(path, read_only=True, inline=inline)
    llm = OfflineLLM()
    try:
        retriever = Retriever(store.search, llm, Clock.starting_at(WALL0))
        yield OperatorStore(store.search, retriever), retriever
    finally:
        await llm.aclose()
        store.close()


async def test_search_answers_the_retrievers_ranking_as_json(
    seeded: tuple[Path, dict[str, int]],
) -> None:
    """A search answers the retriever's hits of the guild only, in its order with its scores,
    JSON-ready with ids as strings."""
    path, ids = seeded
    async with operator_over(path) as (operator, retriever):
        hits = await operator.search(GUILD, "Bento tricks", 10)
        ranked = await retriever.search_notes(GUILD, "Bento tricks", 10)
    assert hits[0]["note_id"] == str(ids["bento"])
    assert [hit["note_id"] for hit in hits] == [str(hit.note.id) for hit in ranked]
    assert [hit["score"] for hit in hits] == [round(hit.score, 6) for hit in ranked]
    assert str(ids["other"]) not in {hit["note_id"] for hit in hits}
    hit = hits[0]
    assert set(hit) == HIT_KEYS
    assert hit["guild_id"] == str(GUILD) and hit["title"] == "Bento learns tricks"
    assert hit["participants"] == [
        {"user_id": "2", "name": "Sam"},
        {"user_id": "3", "name": "Maya"},
    ]
    assert hit["keyword_score"] > 0 and 0 < hit["score"] <= 1
    json.dumps(hits)


async def test_a_question_without_search_terms_answers_what_the_retriever_finds(
    seeded: tuple[Path, dict[str, int]],
) -> None:
    """A question of stop words only has no keyword to match: it is answered as replies and
    the memory page answer it (by meaning alone), never with another rule of its own."""
    path, _ = seeded
    async with operator_over(path) as (operator, retriever):
        hits = await operator.search(GUILD, "the and of", 10)
        ranked = await retriever.search_notes(GUILD, "the and of", 10)
    assert [(hit["note_id"], hit["score"]) for hit in hits] == [
        (str(hit.note.id), round(hit.score, 6)) for hit in ranked
    ]
    assert all(hit["keyword_score"] is None for hit in hits)


async def test_profile(seeded: tuple[Path, dict[str, int]]) -> None:
    """A member's facts by section with sources, recent notes, and None for strangers."""
    path, ids = seeded
    async with operator_over(path) as (operator, _):
        profile = await operator.profile(GUILD, 2)
        lurker = await operator.profile(GUILD, 9)
        stranger = await operator.profile(GUILD, 12345)
    assert profile is not None
    assert (profile["guild_id"], profile["user_id"], profile["name"]) == ("100", "2", "Sam")
    assert [f["text"] for f in profile["sections"]["bio"]] == ["Lives in Chicago"]
    assert profile["sections"]["bio"][0]["source_kind"] == "stated"
    assert profile["sections"]["relationships"][0]["source_label"] == "Bento learns tricks, Feb 28"
    assert profile["sections"]["skills"] == []
    assert profile["recent_notes"] == [
        {"note_id": str(ids["bento"]), "date": "2026-03-01", "title": "Bento learns tricks"}
    ]
    assert "OTHERGUILDFACT" not in json.dumps(profile)
    assert lurker is not None and lurker["name"] == "Lurker"
    assert stranger is None


async def test_concurrent_searches(seeded: tuple[Path, dict[str, int]]) -> None:
    """Searches awaited at once share the storage owner's connection safely."""
    path, ids = seeded
    found: list[list[str]] = []

    async with operator_over(path, inline=False) as (operator, _):

        async def work() -> None:
            for _ in range(10):
                hits = await operator.search(GUILD, "Bento", 5)
                found.append([hit["note_id"] for hit in hits])

        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(work)
    assert len(found) == 40 and all(one == found[0] for one in found)
    assert found[0][0] == str(ids["bento"])


def test_served_by_the_metrics_server(seeded: tuple[Path, dict[str, int]]) -> None:
    """The metrics server's search route awaits the store on the server's own loop."""
    path, ids = seeded
    with MetricsServer(CollectorRegistry(), port=0) as server:
        store = open_store(path, read_only=True)
        llm = OfflineLLM()

        async def serve() -> None:
            retriever = Retriever(store.search, llm, Clock.wall())
            server.serve_api(OperatorStore(store.search, retriever))

        try:
            server.call(serve)
            url = f"{server.url}/api/memory/search?guild_id={GUILD}&q=bento"
            with urllib.request.urlopen(url, timeout=5) as response:
                body = json.loads(response.read())
        finally:
            server.call(llm.aclose)
            store.close()
    assert body["results"][0]["note_id"] == str(ids["bento"])
    assert str(ids["other"]) not in {hit["note_id"] for hit in body["results"]}


def test_store_needs_a_database(tmp_path: Path) -> None:
    """A missing file is an error, not a new empty database."""
    with pytest.raises(StorageError):
        open_store(tmp_path / "missing.db", read_only=True)
    assert not (tmp_path / "missing.db").exists()
