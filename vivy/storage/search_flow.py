"""Note search written once for both engines: which reads run where, and how they join.

A search finds notes by their own text (vector and keyword), by their evidence windows
(keyword; conversation notes only) and by the time the question names, then compares the
found notes' windows with the question's vector and joins everything into ranking
candidates (:func:`~vivy.storage.candidates.assemble_candidates`). With side connections
each keyword search runs on one in a worker thread, and reads what ranking needs of the
notes it found, while the vector search runs on the call's own connection; or, where the
engine says so (:attr:`EngineReads.keyword_notes_here`), the call's connection reads the
notes found by keyword with those found by vector, once the keyword search hands them over.

What differs between the engines is a small :class:`EngineReads`: both search vectors through
the same in-memory copy (:class:`~vivy.storage.vector_index.BinaryIndex`), and re-rank its
candidates by sqlite-vec's exact distances (:mod:`vivy.storage.sqlite.search`) or pgvector's
(:mod:`vivy.storage.postgres.search`); each has its own keyword index.

A failing vector query (sqlite-vec missing, a question of another dimension) is reported in
the result, not raised, so the keyword searches still serve. A window comparison that fails
on a side, or before the vector search failed, is read again on the call's connection, where
it raises as any other query of the search would.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from vivy.memory.notes import NoteType
from vivy.storage import evidence
from vivy.storage.candidates import (
    CandidateDetails,
    KeywordMatch,
    SearchHits,
    VectorMatch,
    WindowMatch,
    assemble_candidates,
    shown_windows,
)
from vivy.storage.dialect import Tx
from vivy.storage.notes import members_named, notes_in_range
from vivy.storage.search_types import NoteSearch, NoteSearchResult, TermPlan, TimeRange

__all__ = ["CONVERSATION", "EngineReads", "ReadPlan", "Side", "candidate_details"]

#: The note type of conversations (topic clusters have no evidence).
CONVERSATION = NoteType.CONVERSATION

#: An engine's connection.
C = TypeVar("C")
C_co = TypeVar("C_co", covariant=True)
R = TypeVar("R")


class _OfNote(Protocol):
    """A match of a note or of one of its windows."""

    @property
    def note_id(self) -> int:
        """The note matched."""


#: A keyword search's match type (notes or evidence windows).
M = TypeVar("M", bound=_OfNote)
#: A keyword search's matches and the plan of the terms it searched (their idf weights).
Found = tuple[list[M], TermPlan]
#: A keyword search's matches, their terms' plan and what ranking reads of their notes.
_Answer = tuple[list[M], TermPlan, "_NoteReads"]


class Side(Protocol[C_co]):
    """A connection beside the call's own, that runs a part of the search in another thread."""

    def read(self, fn: Callable[[C_co], R], /) -> R:
        """``fn`` run on this connection."""


@dataclass(frozen=True, slots=True)
class _NoteReads:
    """What ranking reads of some found notes: their details, their windows' similarity to
    the question (best first; None when comparing failed) and those windows' texts."""

    details: dict[int, CandidateDetails]
    similar: list[WindowMatch] | None
    texts: dict[int, str]


def candidate_details(
    tx: Tx, guild_id: int, note_ids: Sequence[int]
) -> dict[int, CandidateDetails]:
    """Channel, start and end, searchable text and participants of the guild's notes."""
    if not note_ids:
        return {}
    notes, params = tx.dialect.any("id", note_ids)
    # ``+guild_id`` keeps SQLite's planner on the primary key: with a long id list it would
    # otherwise scan the guild's whole (guild_id, ...) index.
    rows = tx.all(
        "SELECT id, channel_id, COALESCE(started_at, created_at),"
        " COALESCE(ended_at, created_at), title || ' ' || summary || ' ' || topics || ' '"
        " || entities || ' ' || decisions, (SELECT string_agg(CAST(user_id AS TEXT), ',')"
        " FROM note_participants AS p WHERE p.note_id = n.id) FROM interaction_notes AS n"
        f" WHERE {notes} AND +guild_id = ?",
        [*params, guild_id],
    )
    return {
        int(r[0]): CandidateDetails(
            int(r[1]),
            float(r[2]),
            float(r[3]),
            str(r[4]),
            frozenset(int(user) for user in str(r[5]).split(",")) if r[5] else frozenset(),
        )
        for r in rows
    }


@dataclass(frozen=True, slots=True)
class ReadPlan:
    """Which reads one note search runs, and where: decided from the search alone, before
    any read (pure), and carried out by :meth:`EngineReads.run`.

    The reads: the notes nearest the question's vector (``vectors``), the notes whose text
    holds its terms (``note_keywords``), the evidence windows that hold them
    (``window_keywords``; conversation notes only), and the notes of the time the question
    names (``time``). A keyword search runs on a side connection in a worker thread when one
    is free (``*_aside``), else on the call's connection after the vector search. Each read
    then reads what ranking needs of the notes it found, comparing their windows with the
    question's vector when ``may_compare`` (dropped if the vector search fails); where
    ``keyword_notes_here`` (the engine's choice), the notes found by keyword are read on the
    call's connection with the vector's. The reads join by note into ranking candidates
    (:func:`~vivy.storage.candidates.assemble_candidates`)."""

    vectors: bool
    note_keywords: bool
    window_keywords: bool
    time: TimeRange | None
    may_compare: bool
    note_keywords_aside: bool
    window_keywords_aside: bool
    keyword_notes_here: bool

    @classmethod
    def of(cls, search: NoteSearch, sides: int, *, keyword_notes_here: bool) -> ReadPlan:
        """The plan of ``search`` with ``sides`` side connections, on an engine that reads the
        notes found by keyword on the call's connection or not (``keyword_notes_here``)."""
        with_evidence = search.evidence and search.note_type in (None, CONVERSATION)
        note_keywords = bool(search.terms)
        window_keywords = note_keywords and with_evidence
        note_aside = note_keywords and sides >= 1
        return cls(
            vectors=search.vector is not None,
            note_keywords=note_keywords,
            window_keywords=window_keywords,
            time=search.time,
            may_compare=with_evidence and search.vector is not None,
            note_keywords_aside=note_aside,
            window_keywords_aside=window_keywords and sides >= 2,
            keyword_notes_here=keyword_notes_here,
        )


class EngineReads(ABC, Generic[C]):
    """A note search on one engine: the reads it does its own way, and :meth:`run`."""

    #: The worker threads that run the keyword searches on the sides.
    threads: ClassVar[ThreadPoolExecutor]
    #: What a failing window comparison raises (read again on the call's connection).
    compare_errors: ClassVar[tuple[type[Exception], ...]] = ()
    #: Whether the notes found by the keyword search of notes are read on the call's
    #: connection with those found by vector (one read of both), instead of on the side that
    #: found them. It pays where the sides share the process's cores with the call (SQLite:
    #: both keyword searches on one worker thread): the side is then left with the keyword
    #: searches, while the call's connection reads what it would otherwise wait for.
    keyword_notes_here: ClassVar[bool] = False

    @abstractmethod
    def tx(self, conn: C) -> Tx:
        """The written-once storage functions' transaction on ``conn``."""

    @abstractmethod
    def vectors(self, conn: C, search: NoteSearch) -> list[VectorMatch] | None:
        """The guild's notes nearest the question's vector, best first; None when the vector
        query failed (``conn`` stays usable)."""

    @abstractmethod
    def note_keywords(self, conn: C, search: NoteSearch) -> Found[KeywordMatch]:
        """The notes whose own text matches the question's terms, with the terms' weights
        among notes."""

    @abstractmethod
    def window_keywords(self, conn: C, search: NoteSearch) -> Found[WindowMatch]:
        """The evidence windows that match the question's terms, with the terms' weights
        among windows."""

    @abstractmethod
    def windows(
        self, conn: C, search: NoteSearch, note_ids: Sequence[int], compare: bool
    ) -> tuple[list[WindowMatch], dict[int, str]]:
        """When ``compare``, the question's similarity to each embedded window of the guild's
        notes ``note_ids``, best first; and the texts of windows this read has at hand."""

    def _read_notes(
        self, conn: C, search: NoteSearch, note_ids: Sequence[int], compare: bool
    ) -> _NoteReads:
        """The details of the guild's notes ``note_ids`` and, when ``compare``, their windows'
        similarity to the question; a failing comparison gives None."""
        similar: list[WindowMatch] | None = []
        texts: dict[int, str] = {}
        try:
            similar, texts = self.windows(conn, search, note_ids, compare)
        except self.compare_errors:
            similar = None
        return _NoteReads(
            candidate_details(self.tx(conn), search.guild_id, note_ids), similar, texts
        )

    def _and_reads(
        self,
        keywords: Callable[[C, NoteSearch], Found[M]],
        search: NoteSearch,
        compare: bool,
        *,
        read: bool = True,
    ) -> Callable[[C], _Answer[M]]:
        """A keyword search that then reads what ranking needs of the notes it found (unless
        not ``read``: the call's connection reads them)."""

        def run(conn: C) -> _Answer[M]:
            found, plan = keywords(conn, search)
            if not read:
                return found, plan, _NoteReads({}, [], {})
            ids = list(dict.fromkeys(match.note_id for match in found))
            return found, plan, self._read_notes(conn, search, ids, compare)

        return run

    def run(self, conn: C, search: NoteSearch, sides: Sequence[Side[C]] = ()) -> NoteSearchResult:
        """Run every search of ``search`` on ``conn`` (and ``sides``: more connections to the
        same database) as :meth:`ReadPlan.of` plans them, and join them into ranking
        candidates, one per note."""
        plan = ReadPlan.of(search, len(sides), keyword_notes_here=self.keyword_notes_here)
        note_side, window_side = (*sides[:2], None, None)[:2]
        notes_ahead = (
            self.threads.submit(
                note_side.read,
                self._and_reads(
                    self.note_keywords, search, plan.may_compare, read=not plan.keyword_notes_here
                ),
            )
            if plan.note_keywords_aside and note_side is not None
            else None
        )
        windows_ahead = (
            self.threads.submit(
                window_side.read, self._and_reads(self.window_keywords, search, plan.may_compare)
            )
            if plan.window_keywords_aside and window_side is not None
            else None
        )
        try:
            found = self.vectors(conn, search) if plan.vectors else []
            vectors = found or []
            compare = plan.may_compare and found is not None
            # While the keyword searches run, read what the notes found so far need.
            in_time: list[int] = []
            if plan.time is not None:
                in_time = notes_in_range(
                    self.tx(conn),
                    search.guild_id,
                    plan.time.start,
                    plan.time.end,
                    note_type=search.note_type or CONVERSATION,
                    limit=search.time_candidates,
                )
            early = [*(match.note_id for match in vectors), *in_time]
            reads: list[_NoteReads] = []
            noted: Found[KeywordMatch] | None = None
            if plan.keyword_notes_here:
                # The notes found by keyword are read with these, in the same statements.
                noted = self._answer(
                    notes_ahead,
                    plan.note_keywords,
                    self._and_reads(self.note_keywords, search, compare, read=False),
                    conn,
                    reads,
                )
                early += [match.note_id for match in noted[0]]
            reads.append(self._read_notes(conn, search, list(dict.fromkeys(early)), compare))
            named = members_named(self.tx(conn), search.guild_id, list(search.name_grams))
        finally:
            # Never leave a side busy: the next search will use it.
            running: list[Future[Any]] = [notes_ahead] if notes_ahead is not None else []
            futures.wait(running + ([windows_ahead] if windows_ahead is not None else []))
        if noted is None:
            noted = self._answer(
                notes_ahead,
                plan.note_keywords,
                self._and_reads(self.note_keywords, search, compare),
                conn,
                reads,
            )
        keywords, note_terms = noted
        windows, window_terms = self._answer(
            windows_ahead,
            plan.window_keywords,
            self._and_reads(self.window_keywords, search, compare),
            conn,
            reads,
        )
        hits = SearchHits(
            vectors=tuple(vectors),
            vector_failed=found is None,
            keywords=tuple(keywords),
            windows=tuple(windows),
            in_time=tuple(in_time),
            note_terms=note_terms,
            window_terms=window_terms,
        )
        details: dict[int, CandidateDetails] = {}
        compared: dict[int, WindowMatch] = {}
        texts: dict[int, str] = {}
        complete: set[int] = set()  # notes read with everything ranking needs of them
        for read in reads:
            details.update(read.details)
            texts.update(read.texts)
            if read.similar is not None:
                compared.update((match.window_id, match) for match in read.similar)
            if read.similar is not None or not compare:
                complete.update(read.details)
        # Notes no read found, or whose windows could not be compared: read here, where a
        # failing comparison raises.
        later = [note_id for note_id in hits.note_ids if note_id not in complete]
        if later:
            details.update(candidate_details(self.tx(conn), search.guild_id, later))
            more, more_texts = self.windows(conn, search, later, compare)
            compared.update((match.window_id, match) for match in more)
            texts.update(more_texts)
        # Best first: each note's windows in the order of their similarity to the question.
        similar = sorted(compared.values(), key=lambda match: (-match.score, match.window_id))
        shown = shown_windows(hits.windows, similar if compare else [])
        # Windows found by keyword but not read with their note's windows are read by id.
        unread = [w for ids in shown.values() for w in ids if w not in texts]
        texts.update(evidence.window_texts(self.tx(conn), unread))
        return assemble_candidates(
            search, hits, similar if compare else [], details, shown, texts, named
        )

    @staticmethod
    def _answer(
        ahead: Future[_Answer[M]] | None,
        wanted: bool,
        here: Callable[[C], _Answer[M]],
        conn: C,
        reads: list[_NoteReads],
    ) -> Found[M]:
        """A keyword search's matches and weights, from its side thread or run here without
        one; what it read of its notes joins ``reads``."""
        if ahead is None and not wanted:
            return [], TermPlan({})
        found, plan, read = ahead.result() if ahead is not None else here(conn)
        reads.append(read)
        return found, plan
