"""The retriever: the memory the chat model sees when the bot answers.

For one reply it embeds the query (the current message and a little recent conversation),
searches the guild's notes by vector and by keyword, fuses both rankings
(:mod:`vivy.retrieval.ranking`), loads the profiles of the people concerned, their recent
activity and the server's lore, and renders them as ``<background_facts>``
(:mod:`vivy.retrieval.context`).

Profiles included, each member once: everyone in the conversation (the most recent
``conversation_profiles`` speakers), up to three @mentioned members more, then up to three
participants of the retrieved notes more. Members who opted out are left out.

Fallbacks: memory must never cost the bot its answer.

=================  ============================================  ================
what failed        what the context holds                        ``path``
=================  ============================================  ================
nothing            notes (vector + keyword), profiles, extras    ``full``
nothing            nothing relevant was remembered (``""``)      ``empty``
embedding          notes by keyword only, profiles, extras       ``keyword_only``
note search        profiles, activity and lore only              ``profiles_only``
everything         nothing (``xml == ""``)                       ``empty``
retrieval off      nothing                                       ``disabled``
=================  ============================================  ================

A degraded path keeps its name even when it found nothing, so degradations stay visible in
the metrics. Each failure is logged as a warning; :meth:`Retriever.build_context` never
raises for it.

Similarities are read on the guild's own scale (:mod:`vivy.retrieval.scale`, measured by
the nightly job for the embedding model in use) when it has one, else on the model's default
(:func:`~vivy.retrieval.ranking.calibration_for`); a guild's scale is read once per cache
lifetime.

Built contexts are cached (LRU, 256 entries, five minutes) under a hash of the request and
of the guild's *memory version* (newest note id, the guild's fact, lore and member
fingerprint; one query), so asking twice does not embed or search twice, yet any new note,
fact or lore line is seen at once, and a forgotten member is gone at once. Only complete
contexts (nothing failed) are cached, so a recovered LLM is used on the next request.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog

from vivy.clock import Clock
from vivy.errors import LLMError, StorageError
from vivy.llm.port import LLM, EmbeddingTask
from vivy.memory.notes import NoteType
from vivy.memory.scales import SimilarityScale, scale_key
from vivy.retrieval.context import ActivityBlock, ContextParts, ProfileBlock, clip, render_context
from vivy.retrieval.lines import WordVectors, local_word_vectors
from vivy.retrieval.paths import RetrievalPath
from vivy.retrieval.ranked import NoteHit, ranked_notes
from vivy.retrieval.ranking import Calibration, calibration_for
from vivy.retrieval.settings import DEFAULT_SETTINGS, RetrievalSettings
from vivy.storage.port import SearchStore
from vivy.text.markup import strip_markup
from vivy.text.terms import PIECE, query_terms

__all__ = [
    "ConversationMessage",
    "MemoryContext",
    "RetrievalRequest",
    "Retriever",
    "RetrieverStatistics",
    "embedding_text",
    "keyword_text",
]


_log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class ConversationMessage:
    """One message of the conversation being answered."""

    author_id: int
    author_name: str
    text: str


@dataclass(frozen=True, slots=True)
class RetrievalRequest:
    """What to build memory for: the current message and its conversation.

    ``conversation`` is the reply chain and recent messages, oldest first; include the
    current message as its last entry so that its author's profile is included.
    """

    guild_id: int
    channel_id: int
    query: str
    conversation: tuple[ConversationMessage, ...] = ()
    mentioned_user_ids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class MemoryContext:
    """The ``<background_facts>`` block, the path that built it and what it includes.

    ``note_ids`` lists the notes and topic clusters shown, ``user_ids`` the members whose
    profile is shown.
    """

    xml: str
    path: RetrievalPath
    note_ids: tuple[int, ...]
    user_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RetrieverStatistics:
    """The context cache's state: entries held, and requests served from it or built."""

    cached_contexts: int
    cache_hits: int
    cache_misses: int


def embedding_text(request: RetrievalRequest, settings: RetrievalSettings) -> str:
    """The text embedded for a request: the last few messages before it, then the query.

    Earlier messages are prefixed with their author's name, as notes list participants.
    """
    earlier = (
        _earlier_messages(request)[-settings.context_messages :]
        if settings.context_messages
        else []
    )
    limit = settings.context_message_chars
    lines = [
        f"{message.author_name}: {clip(strip_markup(message.text), limit)}" for message in earlier
    ]
    lines.append(clip(strip_markup(request.query), settings.query_chars))
    return "\n".join(line for line in lines if line.strip())


def keyword_text(request: RetrievalRequest) -> str:
    """The text searched by keyword: the query, or the last message before it if the query
    has no searchable word ("what about that?")."""
    if query_terms(request.query):
        return request.query
    earlier = _earlier_messages(request)
    return earlier[-1].text if earlier else request.query


def _words(text: str) -> str:
    """``text`` as lower-case words separated by single spaces, markup removed."""
    return " ".join(PIECE.findall(strip_markup(text).lower()))


def _earlier_messages(request: RetrievalRequest) -> list[ConversationMessage]:
    """The conversation without the current message, when it is the last entry.

    The last entry counts as the current message when its words contain the query's, since
    callers may strip the bot's mention from the query but show it as ``@Vivy`` in the
    conversation.
    """
    messages = [m for m in request.conversation if m.text.strip()]
    query = _words(request.query)
    if messages and query and f" {query} " in f" {_words(messages[-1].text)} ":
        messages.pop()
    return messages


@dataclass(frozen=True, slots=True)
class _People:
    """Profiles, activity and lore read for one context."""

    profiles: tuple[tuple[int, ProfileBlock], ...]
    activity: tuple[ActivityBlock, ...]
    lore: tuple[str, ...]


async def _choose_people(
    store: SearchStore,
    guild_id: int,
    speakers: Sequence[tuple[int, str]],
    mentioned: Sequence[int],
    participants: Sequence[tuple[int, str]],
    now: float,
    settings: RetrievalSettings,
) -> _People:
    """Read the profiles, recent activity and lore of a context (two storage calls)."""
    candidates = [user for user, _ in speakers] + list(mentioned) + [u for u, _ in participants]
    hidden = await store.opted_out(guild_id, candidates)
    chosen: list[int] = []

    def take(users: Sequence[int], quota: int) -> None:
        added = 0
        for user in users:
            if added >= quota:
                break
            if user in hidden or user in chosen:
                continue
            chosen.append(user)
            added += 1

    # The most recent speakers (up to the cap), in order of first appearance.
    newest_first = list(dict.fromkeys(user for user, _ in reversed(speakers)))
    latest = set(newest_first[: settings.conversation_profiles])
    in_order = [user for user in dict.fromkeys(user for user, _ in speakers) if user in latest]
    take(in_order, len(in_order))
    speakers_kept = list(chosen)
    take(list(mentioned), settings.mention_profiles)
    take([user for user, _ in participants], settings.participant_profiles)

    fallback = {user: name for user, name in participants}
    fallback.update({user: name for user, name in speakers})
    read = await store.people(
        guild_id,
        chosen,
        speakers_kept,
        since=now - settings.activity_days * 86400.0,
        activity_limit=settings.activity_notes,
        lore_limit=settings.lore_items,
    )
    names, facts, recent = read.names, read.facts, read.activity

    def name_of(user: int) -> str:
        return names.get(user) or fallback.get(user) or f"user {user}"

    profiles = tuple(
        (user, ProfileBlock(name_of(user), tuple(facts.get(user, [])))) for user in chosen
    )
    activity = tuple(
        ActivityBlock(name_of(user), tuple(recent[user]))
        for user in speakers_kept
        if user in recent
    )
    lore = tuple(item.text for item in read.lore)
    return _People(profiles, activity, lore)


class Retriever:
    """Builds the memory context of a reply, and searches notes for commands and operators.

    ``observe(path, seconds)`` is called once per :meth:`build_context` with the path taken
    and the time it took (the metrics module records it as a histogram). ``words`` choose
    the quoted lines (:mod:`vivy.retrieval.lines`): the local model's word vectors unless
    given.
    """

    def __init__(
        self,
        store: SearchStore,
        llm: LLM,
        clock: Clock,
        *,
        observe: Callable[[RetrievalPath, float], None] | None = None,
        settings: RetrievalSettings = DEFAULT_SETTINGS,
        words: WordVectors | None = None,
    ) -> None:
        self._store = store
        self._words = words if words is not None else local_word_vectors()
        self._llm = llm
        self._clock = clock
        self._observe = observe
        self._settings = settings
        self._default_scale = calibration_for(llm.embedding_model)
        self._scales: dict[int, tuple[float, Calibration]] = {}
        self._cache: OrderedDict[str, tuple[float, MemoryContext]] = OrderedDict()
        self._hits = 0
        self._misses = 0

    @property
    def settings(self) -> RetrievalSettings:
        """The settings in use."""
        return self._settings

    async def build_context(self, request: RetrievalRequest) -> MemoryContext:
        """The ``<background_facts>`` block for ``request``; never raises for memory failures."""
        started = self._clock.monotonic()
        try:
            context = await self._build(request)
        except Exception:  # a bug must not cost the bot its answer either
            _log.exception("memory retrieval failed", guild_id=request.guild_id)
            context = MemoryContext("", RetrievalPath.EMPTY, (), ())
        if self._observe is not None:
            try:
                self._observe(context.path, self._clock.monotonic() - started)
            except Exception:
                _log.exception("retrieval observer failed", path=context.path)
        return context

    async def search_notes(self, guild_id: int, query: str, limit: int = 10) -> list[NoteHit]:
        """The guild's notes (both types) best matching ``query``, fused and gated, best first.

        Without an embedding (the LLM failed) the search is by keyword only. Raises
        :class:`~vivy.errors.StorageError` when the notes cannot be read.
        """
        vector = await self._embed(query, guild_id)
        (found,) = await ranked_notes(
            self._store,
            guild_id=guild_id,
            vector=vector,
            text=query,
            limits=[(None, max(1, limit))],
            channel_id=None,
            now=self._clock.now(),
            calibration=await self.calibration(guild_id),
            settings=self._settings,
            words=self._words,
            gated=False,
        )
        return list(found.hits)

    async def calibration(self, guild_id: int) -> Calibration:
        """The similarity scale the guild's notes are ranked on: the settings' when they set
        one, else the guild's measured scale for the embedding model, else the model's
        default (also when the measured scale cannot be read)."""
        if self._settings.calibration is not None:
            return self._settings.calibration
        now = self._clock.monotonic()
        held = self._scales.get(guild_id)
        if held is not None and now < held[0]:
            return held[1]
        scale = self._default_scale
        key = scale_key(guild_id, self._llm.embedding_model, self._llm.dimension)
        try:
            stored = await self._store.get_meta(key)
            if stored is not None:
                measured = SimilarityScale.decode(stored)
                scale = Calibration(measured.floor, measured.ceiling)
        except (StorageError, ValueError, TypeError, KeyError) as exc:
            _log.warning("similarity scale unreadable", guild_id=guild_id, error=str(exc))
            return scale
        self._scales[guild_id] = (now + self._settings.cache_ttl_s, scale)
        return scale

    def clear_cache(self) -> None:
        """Forget every cached context and similarity scale."""
        self._cache.clear()
        self._scales.clear()

    def statistics(self) -> RetrieverStatistics:
        """A snapshot of the context cache."""
        return RetrieverStatistics(len(self._cache), self._hits, self._misses)

    async def _build(self, request: RetrievalRequest) -> MemoryContext:
        """Build (or fetch from the cache) the context, degrading as the module docstring says."""
        settings = self._settings
        if not settings.enabled:
            return MemoryContext("", RetrievalPath.DISABLED, (), ())
        guild = request.guild_id
        key: str | None = None
        try:
            version = await self._store.memory_version(guild)
            key = _cache_key(request, version)
        except StorageError as exc:
            _log.warning("memory version unreadable; not caching", guild_id=guild, error=str(exc))
        if key is not None:
            cached = self._cache_get(key)
            if cached is not None:
                self._hits += 1
                return cached
        self._misses += 1

        now = self._clock.now()
        vector = await self._embed(embedding_text(request, settings), guild)
        notes: tuple[NoteHit, ...] = ()
        clusters: tuple[NoteHit, ...] = ()
        notes_ok = True
        vector_ok = vector is not None
        try:
            found_notes, found_clusters = await ranked_notes(
                self._store,
                guild_id=guild,
                vector=vector,
                text=keyword_text(request),
                limits=[
                    (NoteType.CONVERSATION, settings.conversation_notes),
                    (NoteType.TOPIC_CLUSTER, settings.topic_clusters),
                ],
                channel_id=request.channel_id,
                now=now,
                calibration=await self.calibration(guild),
                settings=settings,
                words=self._words,
            )
            notes, clusters = found_notes.hits, found_clusters.hits
            if found_notes.vector_failed or found_clusters.vector_failed:
                vector_ok = False
                _log.warning("vector search failed; keyword search only", guild_id=guild)
        except StorageError as exc:
            notes_ok = False
            _log.warning("note search failed; profiles only", guild_id=guild, error=str(exc))

        speakers = tuple((m.author_id, m.author_name) for m in request.conversation)
        participants = tuple(
            (p.user_id, p.display_name)
            for hit in (*notes, *clusters)
            for p in hit.note.participants
        )
        people: _People | None = None
        try:
            people = await _choose_people(
                self._store,
                guild,
                speakers,
                tuple(request.mentioned_user_ids),
                participants,
                now,
                settings,
            )
        except StorageError as exc:
            _log.warning("profiles unreadable", guild_id=guild, error=str(exc))

        if not notes_ok and people is None:
            return MemoryContext("", RetrievalPath.EMPTY, (), ())
        parts = ContextParts(
            profiles=tuple(block for _, block in people.profiles) if people else (),
            notes=tuple(hit.note for hit in notes),
            clusters=tuple(hit.note for hit in clusters),
            activity=people.activity if people else (),
            lore=people.lore if people else (),
            evidence={hit.note.id: hit.lines for hit in notes if hit.lines},
        )
        xml = render_context(
            parts,
            summary_chars=settings.summary_chars,
            evidence_tokens=settings.evidence_tokens,
            evidence_line_chars=settings.evidence_line_chars,
        )
        complete = notes_ok and vector_ok and people is not None
        if not notes_ok:
            path = RetrievalPath.PROFILES_ONLY
        elif not vector_ok:
            path = RetrievalPath.KEYWORD_ONLY
        else:
            path = RetrievalPath.FULL if xml else RetrievalPath.EMPTY
        context = MemoryContext(
            xml=xml,
            path=path,
            note_ids=tuple(hit.note.id for hit in (*notes, *clusters)),
            user_ids=tuple(user for user, block in people.profiles if block.facts)
            if people
            else (),
        )
        if key is not None and complete:
            self._cache_put(key, context)
        return context

    async def _embed(self, text: str, guild_id: int) -> list[float] | None:
        """The query's embedding, or None when the LLM fails (keyword search only)."""
        if not text.strip():
            return None
        try:
            [vector] = await self._llm.embed([text], EmbeddingTask.QUERY)
        except LLMError as exc:
            _log.warning(
                "query embedding failed; keyword search only", guild_id=guild_id, error=str(exc)
            )
            return None
        except ValueError as exc:  # a provider returning the wrong number of vectors
            _log.warning(
                "query embedding unusable; keyword search only", guild_id=guild_id, error=str(exc)
            )
            return None
        return vector

    def _cache_get(self, key: str) -> MemoryContext | None:
        """The cached context under ``key`` if it is still fresh."""
        entry = self._cache.get(key)
        if entry is None:
            return None
        expires, context = entry
        if self._clock.monotonic() >= expires:
            del self._cache[key]
            return None
        self._cache.move_to_end(key)
        return context

    def _cache_put(self, key: str, context: MemoryContext) -> None:
        """Store a context, evicting the least recently used beyond the cache size."""
        if self._settings.cache_size <= 0:
            return
        self._cache[key] = (self._clock.monotonic() + self._settings.cache_ttl_s, context)
        self._cache.move_to_end(key)
        while len(self._cache) > self._settings.cache_size:
            self._cache.popitem(last=False)


def _cache_key(request: RetrievalRequest, version: Sequence[object]) -> str:
    """A hash of everything a context is built from: the request and the memory version."""
    material = json.dumps(
        [
            request.guild_id,
            request.channel_id,
            request.query,
            [[m.author_id, m.author_name, m.text] for m in request.conversation],
            list(request.mentioned_user_ids),
            list(version),
        ],
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(material.encode()).hexdigest()
