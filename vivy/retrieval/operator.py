"""The operator memory API's data: note search and member profiles (seed 003's search API).

:class:`OperatorStore` implements :class:`~vivy.metrics.server.OperatorAPI`. The metrics
server calls it on its own request threads, outside any event loop, so it does not go
through :class:`~vivy.storage.db.Database`: it opens its own connection (sqlite-vec loaded,
``query_only`` so it cannot write) and serialises calls on it with a lock. Searches are by
keyword only (FTS5 BM25 through the same fusion and gate as the bot), so an operator query
never costs an embedding call. Every answer is JSON-ready, with ids as strings (Discord
snowflakes do not fit a JavaScript number).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import sqlean

from vivy.errors import StorageError
from vivy.retrieval import search
from vivy.retrieval.context import SECTION_TITLES, sections_of
from vivy.retrieval.ranking import OFFLINE_CALIBRATION
from vivy.retrieval.retriever import DEFAULT_SETTINGS, NoteHit, RetrievalSettings, ranked_notes
from vivy.storage.db import Connection, connect
from vivy.storage.profiles import Fact
from vivy.storage.vector_index import BinaryIndex

__all__ = ["OperatorStore"]

T = TypeVar("T")

#: Recent notes listed with a profile.
PROFILE_RECENT_NOTES = 10


class OperatorStore:
    """Read-only memory search and profiles for operators, safe to call from any thread.

    ``now`` gives the UTC wall time for recency (the real clock by default: the API runs in
    real time on the server's threads, never under a mock clock).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        now: Callable[[], float] = time.time,
        settings: RetrievalSettings = DEFAULT_SETTINGS,
    ) -> None:
        if not Path(path).exists():
            raise StorageError(f"no database at {path}")
        self._conn = connect(path)
        self._conn.execute("PRAGMA query_only = ON")
        self._lock = threading.Lock()
        self._now = now
        self._settings = settings
        self._vectors = BinaryIndex()  # keyword search only: never filled

    def search(self, guild_id: int, q: str, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` notes of the guild matching ``q`` by keyword, best first."""
        terms = search.query_terms(q)
        if not terms:
            return []
        found = self._run(
            lambda conn: ranked_notes(
                conn,
                index=self._vectors,
                guild_id=guild_id,
                vector=None,
                text=q,
                note_type=None,
                limit=max(1, limit),
                channel_id=None,
                now=self._now(),
                calibration=OFFLINE_CALIBRATION,
                settings=self._settings,
            )
        )
        return [_hit_json(hit) for hit in found.hits]

    def profile(self, guild_id: int, user_id: int) -> dict[str, Any] | None:
        """The member's active facts by section and recent notes; None if unknown here."""

        def read(conn: Connection) -> dict[str, Any] | None:
            facts = search.profile_facts(conn, guild_id, [user_id])[user_id]
            member = conn.execute(
                "SELECT display_name, opted_out FROM guild_members"
                " WHERE guild_id = ? AND user_id = ?",
                (guild_id, user_id),
            ).fetchone()
            if not facts and member is None:
                return None
            name = search.member_names(conn, guild_id, [user_id]).get(user_id, "")
            recent = conn.execute(
                "SELECT n.id, n.note_date, n.title FROM note_participants AS p"
                " JOIN interaction_notes AS n ON n.id = p.note_id"
                " WHERE p.user_id = ? AND n.guild_id = ?"
                " ORDER BY COALESCE(n.ended_at, n.created_at) DESC, n.id DESC LIMIT ?",
                (user_id, guild_id, PROFILE_RECENT_NOTES),
            ).fetchall()
            grouped = sections_of(facts)
            return {
                "guild_id": str(guild_id),
                "user_id": str(user_id),
                "name": name,
                "opted_out": bool(member[1]) if member is not None else False,
                "sections": {
                    key: [_fact_json(fact) for fact in grouped.get(key, [])]
                    for key, _ in SECTION_TITLES
                },
                "recent_notes": [
                    {"note_id": str(r[0]), "date": str(r[1]), "title": str(r[2])} for r in recent
                ],
            }

        return self._run(read)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    def _run(self, fn: Callable[[Connection], T]) -> T:
        """Run ``fn`` on the connection under the lock, translating SQLite errors."""
        with self._lock:
            try:
                return fn(self._conn)
            except sqlean.Error as exc:
                raise StorageError(f"operator query failed: {exc}") from exc


def _fact_json(fact: Fact) -> dict[str, Any]:
    """One fact as JSON."""
    return {
        "id": str(fact.id),
        "section": fact.section,
        "text": fact.text,
        "source_kind": fact.source_kind,
        "source_note_id": None if fact.source_note_id is None else str(fact.source_note_id),
        "source_label": fact.source_label,
        "created_at": fact.created_at,
    }


def _hit_json(hit: NoteHit) -> dict[str, Any]:
    """One search hit as JSON."""
    note = hit.note
    return {
        "note_id": str(note.id),
        "guild_id": str(note.guild_id),
        "channel_id": str(note.channel_id),
        "channel_name": note.channel_name,
        "note_type": note.note_type,
        "date": note.note_date,
        "title": note.title,
        "summary": note.summary,
        "topics": list(note.topics),
        "entities": list(note.entities),
        "participants": [
            {"user_id": str(p.user_id), "name": p.display_name} for p in note.participants
        ],
        "score": round(hit.score, 6),
        "keyword_score": None if hit.keyword_score is None else round(hit.keyword_score, 6),
    }
