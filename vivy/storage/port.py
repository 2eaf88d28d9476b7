"""The storage port: what the rest of Vivy may ask of a database, by area.

Every method is ``async`` and takes and returns plain typed values (ids, floats, strings and
the frozen records of :mod:`vivy.memory`); vectors cross it as sequences of floats, which each
engine encodes its own way. No connection, cursor, SQL fragment or engine type crosses it, so
both engines (SQLite and PostgreSQL) implement the same protocols and run the same tests.
A store serves one scope of shards: its lists of pending work (open and closed buffers,
profile updates, the nightly job's guilds and days) hold only the guilds of those shards, so
each process of a fleet resumes its own work and no other's.

A method is one unit of work: a method that writes commits its changes in one transaction
before it returns, and fails as a whole.

:class:`Store` bundles the areas; :func:`vivy.storage.engines.open_store` opens either
engine behind them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Protocol, TypeVar

from vivy.memory.database import EmbeddingState

if TYPE_CHECKING:
    from vivy.memory.buffers import (
        AppliedEffects,
        BufferedMessage,
        BufferRow,
        CloseReason,
        StoredBuffer,
    )
    from vivy.memory.database import EmbeddingModel, GuildCounts, LeaseHolder, OutboxState
    from vivy.memory.evidence import EvidenceLine, PendingMessage, WindowText
    from vivy.memory.facts import Fact, FactRecord, LoreRecord, PendingUpdate, UpdateContext
    from vivy.memory.members import (
        BufferedRef,
        ForgetReport,
        GuildStatus,
        MemberCard,
        MemberProfile,
        PeopleReads,
        RememberOutcome,
    )
    from vivy.memory.notes import NewNote, Note, NoteText, PlannedUpdate
    from vivy.memory.page import (
        Correction,
        DayActivity,
        GuildHealth,
        JobRun,
        MemberRow,
        NoteLine,
        PageFact,
        TimelineNote,
    )
    from vivy.memory.scales import ScaleSample
    from vivy.state.buffer import Effect
    from vivy.state.profile import ProfilePlan
    from vivy.storage.search_types import Chosen, Loaded, NoteSearch, NoteSearchResult

#: The value a search caller chooses (see :meth:`SearchStore.find_and_load`).
T = TypeVar("T")

__all__ = [
    "BufferStore",
    "EvidenceStore",
    "ImportStore",
    "JobStore",
    "LeaseStore",
    "MemberStore",
    "MetaStore",
    "NoteStore",
    "PageStore",
    "ProfileStore",
    "ReadOnlyStore",
    "ReembedStore",
    "SearchStore",
    "Store",
]


class BufferStore(Protocol):
    """Open channel buffers, their message rows, and the closed-buffer outbox."""

    async def open_buffer(
        self,
        guild_id: int,
        channel_id: int,
        channel_name: str,
        started_at: float,
        inactivity_s: float,
    ) -> int:
        """Open a buffer for the channel; returns its id."""

    async def append_messages(
        self, buffer_id: int, messages: Sequence[BufferedMessage], last_at: float
    ) -> frozenset[int]:
        """Append messages to an open buffer; returns the ids another buffer already held."""

    async def edit_message(self, message_id: int, text: str, edited_at: float) -> bool:
        """Update a buffered message's text; False if no buffer holds it."""

    async def delete_message(self, message_id: int) -> bool:
        """Remove a buffered message; False if no buffer holds it."""

    async def close_buffer(self, buffer_id: int, closed_at: float, reason: CloseReason) -> None:
        """Close an open buffer: it becomes an outbox row waiting for its note."""

    async def apply_effects(
        self,
        guild_id: int,
        channel_id: int,
        buffer_id: int | None,
        effects: Sequence[Effect],
    ) -> AppliedEffects:
        """Carry out a channel machine's storage effects, in order, in one transaction."""

    async def restore_channel(
        self, channel_id: int
    ) -> tuple[tuple[BufferRow, frozenset[int]] | None, int]:
        """The channel's open buffer with its message ids (or None), and its watermark."""

    async def watermark(self, channel_id: int) -> int:
        """The highest message id the channel ever buffered (0 if none)."""

    async def open_buffer_rows(self, channel_id: int | None = None) -> list[BufferRow]:
        """Open buffers (of one channel, or all), oldest first."""

    async def open_channels(self) -> list[tuple[int, int]]:
        """(guild id, channel id) of every channel with an open buffer."""

    async def closed_buffer_ids(self) -> list[tuple[int, float]]:
        """Closed buffers awaiting their note, as (id, next attempt time), oldest first."""

    async def load_buffer(self, buffer_id: int) -> StoredBuffer | None:
        """A buffer with its messages, or None when it is gone (noted or discarded)."""

    async def record_note_failure(self, buffer_id: int, error: str, retry_at: float) -> None:
        """Count a failed note attempt and set when to try again."""


class NoteStore(Protocol):
    """Conversation notes and topic clusters."""

    async def commit_conversation_note(
        self,
        buffer_id: int,
        note: NewNote,
        *,
        updates_due_at: float | None = None,
        planned: Mapping[int, PlannedUpdate] | None = None,
    ) -> int | None:
        """Write the note of a closed buffer, its evidence and one profile update per
        participant, and delete the buffer, atomically; None if the buffer is gone."""

    async def discard_buffer(self, buffer_id: int) -> bool:
        """Delete a closed buffer too small for a note; False if it is gone."""

    async def commit_cluster_notes(
        self, guild_id: int, day: str, clusters: Sequence[NewNote], completed_at: float
    ) -> list[int]:
        """Write a day's topic clusters and mark the day's cluster pass done, atomically."""

    async def get_notes(self, note_ids: Sequence[int]) -> list[Note]:
        """The notes with these ids, in id order."""

    async def notes_between(
        self, guild_id: int, start: float, end: float, note_type: str
    ) -> list[Note]:
        """The guild's notes of ``note_type`` created in [start, end), oldest first."""


class ProfileStore(Protocol):
    """Members' profile facts and the pending profile updates (an outbox)."""

    async def active_facts(self, guild_id: int, user_id: int) -> list[Fact]:
        """The member's facts still valid."""

    async def profile_version(self, guild_id: int, user_id: int) -> int:
        """The member's profile version (0 before any change)."""

    async def member_profiles(
        self, guild_id: int, user_ids: Sequence[int]
    ) -> dict[int, tuple[int, list[Fact]]]:
        """By member: profile version and active facts."""

    async def members_due_by(
        self, guild_id: int, user_ids: Sequence[int], through: float
    ) -> set[int]:
        """The members with a pending update due at or before ``through``."""

    async def pending_updates(self, user_id: int | None = None) -> list[PendingUpdate]:
        """Pending updates (of one user, or all), oldest first."""

    async def update_context(
        self, guild_id: int, user_id: int, note_ids: Sequence[int]
    ) -> UpdateContext:
        """Everything one update call needs: version, facts, source notes and their lines."""

    async def apply_plan(
        self, guild_id: int, user_id: int, expected_version: int, plan: ProfilePlan, now: float
    ) -> bool:
        """Apply a plan if the profile is still at ``expected_version``; False otherwise."""

    async def apply_updates(
        self,
        guild_id: int,
        user_id: int,
        version: int,
        plan: ProfilePlan,
        update_ids: Sequence[int],
        now: float,
    ) -> bool:
        """Apply the plan and mark the updates applied, or change nothing on a conflict."""

    async def mark_updates_applied(self, update_ids: Sequence[int], now: float) -> None:
        """Mark updates applied (their plan changed nothing)."""

    async def record_update_failure(
        self, update_ids: Sequence[int], error: str, retry_at: float
    ) -> None:
        """Count a failed attempt on each update and set when to try again."""

    async def changed_between(self, guild_id: int, start: float, end: float) -> list[int]:
        """Members whose profile changed in [start, end)."""


class MemberStore(Protocol):
    """Members' own commands: profile view, remember/forget, opt-out, forget-me, lore, status."""

    async def opted_out_members(self) -> set[tuple[int, int]]:
        """(guild id, user id) of every member who opted out."""

    async def add_member_names(self, guild_id: int, names: Sequence[tuple[int, str]]) -> None:
        """Remember that each (user id, name) goes by that name in the guild (an alias)."""

    async def set_guild_names(self, names: Sequence[tuple[int, str]], now: float) -> None:
        """Record each (guild id, name) as the guild's name."""

    async def is_opted_out(self, guild_id: int, user_id: int) -> bool:
        """Whether the member opted out in this guild."""

    async def member_profile(self, guild_id: int, user_id: int) -> MemberProfile:
        """What Vivy remembers about the member, for ``/memory profile``."""

    async def remember_fact(
        self,
        guild_id: int,
        user_id: int,
        display_name: str,
        section: str,
        text: str,
        label: str,
        now: float,
    ) -> RememberOutcome:
        """Store a fact the member stated."""

    async def forget_facts(self, guild_id: int, user_id: int, query: str, now: float) -> list[str]:
        """Invalidate the member's facts matching ``query``; returns their texts."""

    async def forget_member(self, guild_id: int, user_id: int) -> ForgetReport:
        """Remove everything remembered about the member in the guild, atomically."""

    async def set_opted_out(
        self, guild_id: int, user_id: int, display_name: str, opted_out: bool, now: float
    ) -> list[BufferedRef]:
        """Opt the member out (dropping their buffered messages) or back in."""

    async def add_lore(self, guild_id: int, author_id: int, text: str, now: float) -> int:
        """Store a fact about the server; returns its id."""

    async def guild_status(self, guild_id: int) -> GuildStatus:
        """Counts of what is remembered in the guild, for ``/memory status``."""


class EvidenceStore(Protocol):
    """Notes' evidence: their human lines and windows of them."""

    async def prune_evidence(self, before: float) -> int:
        """Drop the evidence of notes that ended before ``before``; returns lines removed."""

    async def windows_to_embed(self, limit: int) -> list[WindowText]:
        """Up to ``limit`` windows without an embedding, oldest first."""

    async def set_window_embeddings(self, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
        """Store windows' new embeddings by window id."""


class JobStore(Protocol):
    """The nightly job's log."""

    async def completed_days(self) -> list[date]:
        """Days whose nightly job completed."""

    async def first_note_time(self) -> float | None:
        """When the first note was created, or None."""

    async def guilds_with_notes(self, start: float, end: float) -> list[int]:
        """Guilds with conversation notes created in [start, end)."""

    async def pass_done(self, guild_id: int, day: date, job_pass: str) -> bool:
        """Whether the pass already ran for the guild and day."""

    async def record_pass(self, guild_id: int, day: date, job_pass: str, now: float) -> None:
        """Record a pass done."""

    async def record_run(self, day: date, now: float) -> None:
        """Record the day's job complete."""

    async def scale_sample(
        self, guild_id: int, dimension: int, *, notes: int, windows: int
    ) -> ScaleSample:
        """The guild's newest notes with vectors of ``dimension`` and some of their windows'."""

    async def tidy_keyword_indexes(self) -> bool:
        """One bounded step of the keyword indexes' nightly upkeep, so that searches stay
        fast as they grow; True while another step has work to do."""


class MetaStore(Protocol):
    """Facts about the database itself."""

    async def get_meta(self, key: str) -> str | None:
        """The value stored under ``key``, or None."""

    async def set_meta(self, key: str, value: str) -> None:
        """Store ``value`` under ``key`` (a guild's similarity scale, for one)."""

    async def adopt_embedding_model(self, model: str, dimension: int) -> EmbeddingModel | None:
        """Record the embedding model, or return the other one the notes were embedded with."""

    async def other_embedding_model(self, model: str, dimension: int) -> EmbeddingModel | None:
        """The other embedding model the notes were embedded with, or None (a read)."""


class ReembedStore(Protocol):
    """``vivy reembed``: new note vectors staged until every note has one, then swapped in."""

    async def begin_staging(self, model_key: str) -> int:
        """Start or resume staging for ``model_key``; returns how many are staged already."""

    async def notes_to_embed(self, limit: int) -> list[NoteText]:
        """Up to ``limit`` notes without a staged vector, oldest first."""

    async def stage_vectors(self, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
        """Keep new vectors until every note has one."""

    async def swap_note_vectors(self, model: str, dimension: int) -> int | None:
        """Swap every note vector for its staged one; None (no change) while one is missing."""


class ImportStore(Protocol):
    """The bookkeeping of ``vivy import``: how far channels were fed, and what the pipeline
    holds and has left to do."""

    async def fed_high_marks(self, channel_ids: Sequence[int]) -> dict[int, int]:
        """Each channel's highest stored message id (closed or open buffer)."""

    async def note_counts(self) -> dict[str, int]:
        """Stored notes by type."""

    async def fact_count(self) -> int:
        """Stored profile facts, active or not."""

    async def outbox_state(self) -> OutboxState:
        """The pipeline's unfinished work."""


class PageStore(Protocol):
    """The memory page's reads and corrections; every one names its guild, and each
    correction is logged with ``who`` made it in its own transaction."""

    async def guild_ids(self) -> list[int]:
        """Every guild with a member or a note."""

    async def guild_names(self) -> dict[int, str]:
        """Every named guild's name, by id."""

    async def newest_day(self, guild_id: int) -> str | None:
        """The UTC date of the guild's newest note."""

    async def timeline(self, guild_id: int, first: str, last: str) -> list[TimelineNote]:
        """The guild's notes dated ``first`` to ``last``, newest day first."""

    async def activity(self, guild_id: int, first: str, last: str) -> list[DayActivity]:
        """Notes, messages and clusters per day from ``first`` to ``last``."""

    async def members(self, guild_id: int) -> list[MemberRow]:
        """The guild's named members."""

    async def member(self, guild_id: int, user_id: int) -> MemberRow | None:
        """One member, or None when the guild does not know them."""

    async def fact_history(self, guild_id: int, user_id: int) -> list[PageFact]:
        """Every fact of the member with its history."""

    async def note(self, guild_id: int, note_id: int) -> tuple[Note, list[NoteLine]] | None:
        """A note of the guild with its kept messages."""

    async def job_log(self, guild_id: int, limit: int) -> list[JobRun]:
        """The guild's newest nightly passes."""

    async def health(self, guild_id: int) -> tuple[GuildStatus, GuildHealth]:
        """The guild's counts, evidence kept and last errors."""

    async def corrections(self, guild_id: int, limit: int) -> list[Correction]:
        """The guild's newest corrections."""

    async def remove_fact(
        self, guild_id: int, user_id: int, fact_id: int, who: str, now: float
    ) -> str | None:
        """Invalidate an active fact as ``/memory forget`` does; its text, or None."""

    async def remove_note(self, guild_id: int, note_id: int, who: str, now: float) -> int | None:
        """Delete a note with what was derived from it; notes removed, or None."""

    async def forget_member(
        self, guild_id: int, user_id: int, who: str, now: float
    ) -> ForgetReport:
        """Forget the member as forget-me does."""


class SearchStore(Protocol):
    """Note search and the reads a reply's memory context is built from; every read is
    scoped to the guild it names."""

    async def memory_version(self, guild_id: int) -> tuple[int | float | None, ...]:
        """A fingerprint of everything a guild's context is built from; it changes with it."""

    async def find_notes(self, searches: Sequence[NoteSearch]) -> list[NoteSearchResult]:
        """Run each search (vector, keyword, evidence, time, names) and return its ranking
        candidates, in order. A failing vector search is reported in its result."""

    async def note_hits(
        self, guild_id: int, note_ids: Sequence[int], evidence_of: Sequence[int]
    ) -> tuple[list[Note], dict[int, tuple[EvidenceLine, ...]]]:
        """The guild's notes by id in the order given, and the evidence lines of those of
        them in ``evidence_of``, oldest first, by note id."""

    async def find_and_load(
        self,
        guild_id: int,
        searches: Sequence[NoteSearch],
        choose: Callable[[list[NoteSearchResult]], Chosen[T]],
    ) -> Loaded[T]:
        """:meth:`find_notes` of ``searches`` (all of the guild), then ``choose`` (pure: it
        runs on the storage owner's thread) picks from the results, then :meth:`note_hits`
        of what it picked, in one call of the owner: one hand-off instead of two."""

    async def opted_out(self, guild_id: int, user_ids: Sequence[int]) -> set[int]:
        """The members among ``user_ids`` who opted out of memory in this guild."""

    async def people(
        self,
        guild_id: int,
        users: Sequence[int],
        active: Sequence[int],
        *,
        since: float,
        activity_limit: int,
        lore_limit: int,
    ) -> PeopleReads:
        """Names and facts of ``users``, recent notes of ``active`` members, and lore."""

    async def member_card(self, guild_id: int, user_id: int, notes: int) -> MemberCard | None:
        """What the operator API shows of a member; None when the guild does not know them."""

    async def get_meta(self, key: str) -> str | None:
        """A fact about the database (a guild's similarity scale), or None."""


class ReadOnlyStore(Protocol):
    """The operator commands' read-only view of an existing database.

    Synchronous: the commands run outside any event loop; an engine implements it with its
    blocking client. It never creates, migrates or changes a database.
    """

    def close(self) -> None:
        """Release the connection."""

    def schema_version(self) -> int:
        """The database's schema version (0 for a file that is not a Vivy database)."""

    def integrity_problems(self) -> list[str]:
        """What the engine's integrity check reports (empty when sound)."""

    def foreign_key_problems(self) -> list[str]:
        """Rows whose foreign key points at a missing row."""

    def evidence_problems(self) -> list[str]:
        """Evidence rows that belong to no note, or to a note of another guild."""

    def embedding_state(self) -> EmbeddingState:
        """The recorded embedding model against the stored vectors."""

    def guild_ids(self) -> list[int]:
        """Every guild with a member, a note or server lore, in id order."""

    def guild_counts(self) -> list[GuildCounts]:
        """Every guild with a member, a note, server lore or a buffer, with its counts, in id
        order."""

    def guild_names(self) -> dict[int, str]:
        """Every named guild's name, by id."""

    def guild_members(self, guild_id: int) -> list[tuple[int, str]]:
        """The guild's members as (user id, display name), by display name."""

    def member_fact_counts(self, guild_id: int) -> dict[int, tuple[int, int]]:
        """Each member's active and retired fact counts, by user id."""

    def member_name(self, guild_id: int, user_id: int) -> str | None:
        """The member's display name in the guild, if Vivy has seen them."""

    def profile_records(
        self, guild_id: int, user_id: int, *, include_invalidated: bool
    ) -> list[FactRecord]:
        """The member's facts with their history, in section order, oldest first."""

    def newest_note_date(self, guild_id: int) -> str | None:
        """The UTC date of the guild's newest note, or None."""

    def list_notes(
        self,
        guild_id: int,
        *,
        since: str | None = None,
        note_type: str | None = None,
        limit: int | None = 20,
    ) -> list[Note]:
        """A guild's newest notes (on or after the UTC date ``since``), newest first; all of
        them when ``limit`` is None."""

    def note_lines(self, guild_id: int, *, author_id: int | None = None) -> list[EvidenceLine]:
        """Every kept message of the guild's notes (only ``author_id``'s, when given), by
        note then message."""

    def pending_messages(self, guild_id: int, author_id: int) -> list[PendingMessage]:
        """The member's messages still in the guild's buffers, oldest first."""

    def known_names(self, guild_id: int, user_id: int) -> list[str]:
        """The names (lower case) Vivy has seen the member go by in the guild."""

    def members_known_as(self, guild_id: int, name: str) -> list[int]:
        """The members of the guild Vivy has seen go by ``name`` (any case), in id order."""

    def all_lore(self, guild_id: int) -> list[LoreRecord]:
        """The guild's server lore, retired entries too, oldest first."""

    def active_lore(self, guild_id: int) -> list[str]:
        """The guild's server lore still valid, oldest first."""


class LeaseStore(Protocol):
    """Shard leases of a fleet of processes sharing one database (PostgreSQL only).

    Times are the processes' wall clocks; a lease is safe whatever they say, because every
    buffer write is fenced by the epoch (see :class:`~vivy.shards.Fence`).
    """

    async def acquire(
        self, shard_id: int, shard_count: int, owner: str, now: float, ttl_s: float
    ) -> int | None:
        """Take the shard's lease until ``now + ttl_s`` if it is free, expired or already
        ``owner``'s; its new epoch, or None while another owner's lease is live."""

    async def renew(
        self, owner: str, held: Mapping[int, int], now: float, ttl_s: float
    ) -> set[int]:
        """Extend the leases held at these epochs to ``now + ttl_s``; returns the shards
        still ours."""

    async def release(self, owner: str, held: Mapping[int, int]) -> None:
        """Let the leases go at once (a graceful stop)."""

    async def holders(self, shard_ids: Sequence[int]) -> list[LeaseHolder]:
        """The stored leases of these shards."""

    async def other_fleet(self, shard_count: int, now: float) -> list[LeaseHolder]:
        """Live leases taken with another shard count."""

    async def live(self, now: float) -> list[LeaseHolder]:
        """Every live lease: the processes of a fleet running on this database."""


class Closer(Protocol):
    """Releases an engine's connections."""

    def __call__(self) -> None:
        """Close; later calls on the store raise :class:`~vivy.errors.StorageError`."""


@dataclass(frozen=True, slots=True)
class Store:
    """Every area of storage, over one engine."""

    buffers: BufferStore
    notes: NoteStore
    profiles: ProfileStore
    members: MemberStore
    evidence: EvidenceStore
    jobs: JobStore
    meta: MetaStore
    reembed: ReembedStore
    search: SearchStore
    imports: ImportStore
    pages: PageStore
    closer: Closer
    #: Shard leases; None on SQLite, whose database one process owns.
    leases: LeaseStore | None = None

    def close(self) -> None:
        """Release the engine."""
        self.closer()
