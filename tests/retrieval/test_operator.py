"""The operator API's store, called from plain threads as the metrics server calls it."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio.from_thread
import pytest
from prometheus_client import CollectorRegistry

from tests.retrieval import WALL0, add_fact, add_member, add_note, new_note
from vivy.errors import StorageError
from vivy.retrieval import OperatorStore
from vivy.storage.engines import open_store
from vivy.storage.sqlite.db import Connection, Database
from vivy.web.server import OperatorServer as MetricsServer

T = TypeVar("T")

GUILD = 100
OTHER = 200


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


@contextmanager
def serving_operator_store(path: Path, *, now: Callable[[], float]) -> Iterator[OperatorStore]:
    """An operator store over the existing database ``path``, opened read-only, on an event
    loop of its own in a background thread, as a server outside the app would hold it."""
    with anyio.from_thread.start_blocking_portal() as portal:
        store = open_store(path, read_only=True)
        try:
            yield OperatorStore(store.search, portal.call, now=now)
        finally:
            store.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[OperatorStore, dict[str, int]]]:
    """An operator store over a seeded database file."""
    path = tmp_path / "vivy.db"
    db = Database.open(path, inline=True)
    ids = db.write_sync(seed)
    db.close()
    with serving_operator_store(path, now=lambda: WALL0) as operator:
        yield operator, ids


def in_thread(fn: Callable[[], T]) -> T:
    """Run ``fn`` on a fresh plain thread (no event loop) and return its result."""
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(fn()))
    thread.start()
    thread.join()
    assert result, "the call raised on its thread"
    return result[0]  # type: ignore[no-any-return]


def test_search_from_a_thread(store: tuple[OperatorStore, dict[str, int]]) -> None:
    """Keyword search answers JSON-ready hits of the guild only, ids as strings."""
    operator, ids = store
    hits = in_thread(lambda: operator.search(GUILD, "Bento tricks", 10))
    assert [hit["note_id"] for hit in hits] == [str(ids["bento"])]
    hit = hits[0]
    assert hit["guild_id"] == str(GUILD) and hit["title"] == "Bento learns tricks"
    assert hit["participants"] == [
        {"user_id": "2", "name": "Sam"},
        {"user_id": "3", "name": "Maya"},
    ]
    assert hit["keyword_score"] > 0 and 0 < hit["score"] <= 1
    json.dumps(hits)
    assert in_thread(lambda: operator.search(GUILD, "the and of", 10)) == []


def test_profile_from_a_thread(store: tuple[OperatorStore, dict[str, int]]) -> None:
    """A member's facts by section with sources, recent notes, and None for strangers."""
    operator, ids = store
    profile = in_thread(lambda: operator.profile(GUILD, 2))
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
    lurker = in_thread(lambda: operator.profile(GUILD, 9))
    assert lurker is not None and lurker["name"] == "Lurker"
    assert in_thread(lambda: operator.profile(GUILD, 12345)) is None


def test_concurrent_threads(store: tuple[OperatorStore, dict[str, int]]) -> None:
    """Several request threads at once share the connection safely."""
    operator, _ = store
    results: list[int] = []
    lock = threading.Lock()

    def work() -> None:
        for _ in range(20):
            found = operator.search(GUILD, "Bento", 5)
            with lock:
                results.append(len(found))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [1] * 80


def test_served_by_the_metrics_server(store: tuple[OperatorStore, dict[str, int]]) -> None:
    """The metrics server's search route answers from the store."""
    operator, ids = store
    with MetricsServer(CollectorRegistry(), operator, port=0) as server:
        url = f"{server.url}/api/memory/search?guild_id={GUILD}&q=bento"
        with urllib.request.urlopen(url, timeout=5) as response:
            body = json.loads(response.read())
    assert [hit["note_id"] for hit in body["results"]] == [str(ids["bento"])]


def test_store_needs_a_database(tmp_path: Path) -> None:
    """A missing file is an error, not a new empty database."""
    with pytest.raises(StorageError):
        open_store(tmp_path / "missing.db", read_only=True)
    assert not (tmp_path / "missing.db").exists()
