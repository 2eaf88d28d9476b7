"""The operator memory API's data: note search and member profiles, as JSON.

:class:`OperatorStore` implements :class:`~vivy.web.asgi.OperatorAPI`, awaited by the operator
server's handlers on the event loop that owns the storage, so the API reads through the same
storage owner as the bot and never opens a connection of its own. A search is the replies'
own: :meth:`~vivy.retrieval.Retriever.search_notes` of the retriever the memory page and
``vivy search`` use, which embeds the question with the configured embedding provider and
ranks on the guild's calibration, so the API, the page and the command list the same notes
with the same scores (by keyword only when the embedding call fails). Every answer is
JSON-ready, with ids as strings (Discord snowflakes do not fit a JavaScript number).
"""

from __future__ import annotations

from typing import Any

from vivy.memory.facts import Fact
from vivy.retrieval.context import SECTION_TITLES, sections_of
from vivy.retrieval.ranked import NoteHit
from vivy.retrieval.retriever import Retriever
from vivy.storage.port import SearchStore

__all__ = ["OperatorStore"]

#: Recent notes listed with a profile.
PROFILE_RECENT_NOTES = 10


class OperatorStore:
    """Read-only memory search and profiles for operators, over the storage's ``search``
    area and the retriever of replies (both living on the event loop the server runs in)."""

    def __init__(self, store: SearchStore, retriever: Retriever) -> None:
        self._store = store
        self._retriever = retriever

    async def search(self, guild_id: int, q: str, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` notes of the guild for ``q``, best first: the retriever's ranking,
        exactly as the memory page and ``vivy search`` show it."""
        return [_hit_json(hit) for hit in await self._retriever.search_notes(guild_id, q, limit)]

    async def profile(self, guild_id: int, user_id: int) -> dict[str, Any] | None:
        """The member's active facts by section and recent notes; None if unknown here."""
        card = await self._store.member_card(guild_id, user_id, PROFILE_RECENT_NOTES)
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
