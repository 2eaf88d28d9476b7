"""The operator memory API's data: note search and member profiles (seed 003's search API).

:class:`OperatorStore` implements :class:`~vivy.web.asgi.OperatorAPI`. The operator
server calls it on worker threads, outside any event loop; it hands each call to
the event loop that owns the storage (``call``: :func:`anyio.from_thread.run` with that
loop's token, or a blocking portal's ``call``), so the API reads through the same storage
owner as the bot and never opens a connection of its own. Searches are by keyword only
(FTS5 BM25 through the same fusion and gate as the bot), so an operator query never costs an
embedding call. Every answer is JSON-ready, with ids as strings (Discord snowflakes do not
fit a JavaScript number).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar

import anyio.from_thread
import anyio.lowlevel

from vivy.memory.facts import Fact
from vivy.memory.members import MemberCard
from vivy.retrieval.context import SECTION_TITLES, sections_of
from vivy.retrieval.ranked import NoteHit, ranked_notes
from vivy.retrieval.ranking import LOCAL_CALIBRATION
from vivy.retrieval.settings import DEFAULT_SETTINGS, RetrievalSettings
from vivy.storage.port import SearchStore
from vivy.text.terms import query_terms

__all__ = ["OperatorStore", "loop_caller"]

T = TypeVar("T")

#: Recent notes listed with a profile.
PROFILE_RECENT_NOTES = 10


class LoopCall(Protocol):
    """Runs a coroutine function on the storage's event loop from another thread."""

    def __call__(self, fn: Callable[[], Coroutine[Any, Any, T]], /) -> T: ...


def loop_caller() -> LoopCall:
    """A :class:`LoopCall` into the event loop this is called from (the app's)."""
    token = anyio.lowlevel.current_token()

    def call(fn: Callable[[], Coroutine[Any, Any, T]], /) -> T:
        return anyio.from_thread.run(fn, token=token)

    return call


class OperatorStore:
    """Read-only memory search and profiles for operators, safe to call from any thread.

    ``now`` gives the UTC wall time for recency: the app's ``Clock.now`` (the API runs in
    real time on the server's threads, never under a mock clock).
    """

    def __init__(
        self,
        store: SearchStore,
        call: LoopCall,
        *,
        now: Callable[[], float],
        settings: RetrievalSettings = DEFAULT_SETTINGS,
    ) -> None:
        self._store = store
        self._call = call
        self._now = now
        self._settings = settings

    def search(self, guild_id: int, q: str, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` notes of the guild matching ``q`` by keyword, best first."""
        if not query_terms(q):
            return []

        async def find() -> list[NoteHit]:
            (found,) = await ranked_notes(
                self._store,
                guild_id=guild_id,
                vector=None,
                text=q,
                limits=[(None, max(1, limit))],
                channel_id=None,
                now=self._now(),
                calibration=LOCAL_CALIBRATION,
                settings=self._settings,
                gated=False,
            )
            return list(found.hits)

        return [_hit_json(hit) for hit in self._call(find)]

    def profile(self, guild_id: int, user_id: int) -> dict[str, Any] | None:
        """The member's active facts by section and recent notes; None if unknown here."""

        async def read() -> MemberCard | None:
            return await self._store.member_card(guild_id, user_id, PROFILE_RECENT_NOTES)

        card = self._call(read)
        if card is None:
            return None
        grouped = sections_of(list(card.facts))
        return {
            "guild_id": str(guild_id),
            "user_id": str(user_id),
            "name": card.name,
            "opted_out": card.opted_out,
            "sections": {
                key: [_fact_json(fact) for fact in grouped.get(key, [])]
                for key, _ in SECTION_TITLES
            },
            "recent_notes": [
                {"note_id": str(note_id), "date": day, "title": title}
                for note_id, day, title in card.recent_notes
            ],
        }


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
