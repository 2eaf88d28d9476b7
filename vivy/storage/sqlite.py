"""The SQLite engine behind the storage port.

Each area runs the synchronous functions of its :mod:`vivy.storage` module through the one
:class:`~vivy.storage.db.Database` owner: reads with :meth:`~Database.read`, and each write
method as one :meth:`~Database.write` (one transaction, group-committed with its neighbours).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from vivy.storage import (
    buffers,
    context_reads,
    evidence,
    fts,
    jobs,
    maintenance,
    members,
    meta,
    notes,
    profiles,
    reembed,
    search,
)
from vivy.storage.candidates import chosen_and_loaded
from vivy.storage.db import Connection, Database
from vivy.storage.port import Store
from vivy.storage.vector_index import BinaryIndex

if TYPE_CHECKING:
    from vivy.memory.buffers import (
        AppliedEffects,
        BufferedMessage,
        BufferRow,
        CloseReason,
        StoredBuffer,
    )
    from vivy.memory.database import EmbeddingModel, OutboxState
    from vivy.memory.evidence import EvidenceLine, WindowText
    from vivy.memory.facts import Fact, PendingUpdate, UpdateContext
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
    from vivy.state.buffer import Effect
    from vivy.state.profile import ProfilePlan
    from vivy.storage.search_types import Chosen, Loaded, NoteSearch, NoteSearchResult

#: The value a search caller chooses (see :meth:`SqliteSearchStore.find_and_load`).
T = TypeVar("T")

__all__ = ["open_sqlite_store", "sqlite_store"]


def sqlite_store(db: Database) -> Store:
    """Every storage area over the SQLite owner ``db``; closing the store closes ``db``."""
    return Store(
        buffers=SqliteBufferStore(db),
        notes=SqliteNoteStore(db),
        profiles=SqliteProfileStore(db),
        members=SqliteMemberStore(db),
        evidence=SqliteEvidenceStore(db),
        jobs=SqliteJobStore(db),
        meta=SqliteMetaStore(db),
        reembed=SqliteReembedStore(db),
        search=SqliteSearchStore(db),
        imports=SqliteImportStore(db),
        closer=db.close,
    )


def open_sqlite_store(path: str | Path, *, inline: bool = False) -> Store:
    """Open (creating and migrating as needed) the SQLite database at ``path`` as a store.

    ``inline`` runs calls on the event loop's thread (tests under trio's MockClock).
    """
    return sqlite_store(Database.open(path, inline=inline))


class SqliteBufferStore:
    """Buffer storage on SQLite: :mod:`vivy.storage.buffers` run through the owner."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def open_buffer(
        self,
        guild_id: int,
        channel_id: int,
        channel_name: str,
        started_at: float,
        inactivity_s: float,
    ) -> int:
        """Open a buffer for the channel; returns its id."""
        return await self._db.write(
            buffers.open_buffer, guild_id, channel_id, channel_name, started_at, inactivity_s
        )

    async def append_messages(
        self, buffer_id: int, messages: Sequence[BufferedMessage], last_at: float
    ) -> frozenset[int]:
        """Append messages to an open buffer; returns the ids another buffer already held."""
        return await self._db.write(buffers.append_messages, buffer_id, messages, last_at)

    async def edit_message(self, message_id: int, text: str, edited_at: float) -> bool:
        """Update a buffered message's text; False if no buffer holds it."""
        return await self._db.write(buffers.edit_stored_message, message_id, text, edited_at)

    async def delete_message(self, message_id: int) -> bool:
        """Remove a buffered message; False if no buffer holds it."""
        return await self._db.write(buffers.delete_stored_message, message_id)

    async def close_buffer(self, buffer_id: int, closed_at: float, reason: CloseReason) -> None:
        """Close an open buffer: it becomes an outbox row waiting for its note."""
        await self._db.write(buffers.close_buffer, buffer_id, closed_at, reason)

    async def apply_effects(
        self,
        guild_id: int,
        channel_id: int,
        buffer_id: int | None,
        effects: Sequence[Effect],
    ) -> AppliedEffects:
        """Carry out a channel machine's storage effects, in order, in one transaction."""
        return await self._db.write(buffers.apply_effects, guild_id, channel_id, buffer_id, effects)

    async def restore_channel(
        self, channel_id: int
    ) -> tuple[tuple[BufferRow, frozenset[int]] | None, int]:
        """The channel's open buffer with its message ids (or None), and its watermark."""
        return await self._db.read(buffers.restore_channel, channel_id)

    async def watermark(self, channel_id: int) -> int:
        """The highest message id the channel ever buffered (0 if none)."""
        return await self._db.read(buffers.watermark, channel_id)

    async def open_buffer_rows(self, channel_id: int | None = None) -> list[BufferRow]:
        """Open buffers (of one channel, or all), oldest first."""
        return await self._db.read(buffers.open_buffer_rows, channel_id)

    async def open_channels(self) -> list[tuple[int, int]]:
        """(guild id, channel id) of every channel with an open buffer."""
        return await self._db.read(buffers.open_channels)

    async def closed_buffer_ids(self) -> list[tuple[int, float]]:
        """Closed buffers awaiting their note, as (id, next attempt time), oldest first."""
        return await self._db.read(buffers.closed_buffer_ids)

    async def load_buffer(self, buffer_id: int) -> StoredBuffer | None:
        """A buffer with its messages, or None when it is gone (noted or discarded)."""
        return await self._db.read(buffers.load_buffer, buffer_id)

    async def record_note_failure(self, buffer_id: int, error: str, retry_at: float) -> None:
        """Count a failed note attempt and set when to try again."""
        await self._db.write(buffers.record_note_failure, buffer_id, error, retry_at)


class SqliteNoteStore:
    """Note storage on SQLite: :mod:`vivy.storage.notes` run through the owner."""

    def __init__(self, db: Database) -> None:
        self._db = db

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
        return await self._db.write(
            notes.commit_conversation_note,
            buffer_id,
            note,
            updates_due_at=updates_due_at,
            planned=planned,
        )

    async def discard_buffer(self, buffer_id: int) -> bool:
        """Delete a closed buffer too small for a note; False if it is gone."""
        return await self._db.write(notes.discard_buffer, buffer_id)

    async def commit_cluster_notes(
        self, guild_id: int, day: str, clusters: Sequence[NewNote], completed_at: float
    ) -> list[int]:
        """Write a day's topic clusters and mark the day's cluster pass done, atomically."""
        return await self._db.write(
            notes.commit_cluster_notes, guild_id, day, clusters, completed_at
        )

    async def get_notes(self, note_ids: Sequence[int]) -> list[Note]:
        """The notes with these ids, in id order."""
        return await self._db.read(notes.get_notes, note_ids)

    async def notes_between(
        self, guild_id: int, start: float, end: float, note_type: str
    ) -> list[Note]:
        """The guild's notes of ``note_type`` created in [start, end), oldest first."""
        return await self._db.read(notes.notes_between, guild_id, start, end, note_type)


class SqliteProfileStore:
    """Profile storage on SQLite: :mod:`vivy.storage.profiles` run through the owner."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def active_facts(self, guild_id: int, user_id: int) -> list[Fact]:
        """The member's facts still valid."""
        return await self._db.read(profiles.active_facts, guild_id, user_id)

    async def profile_version(self, guild_id: int, user_id: int) -> int:
        """The member's profile version (0 before any change)."""
        return await self._db.read(profiles.profile_version, guild_id, user_id)

    async def member_profiles(
        self, guild_id: int, user_ids: Sequence[int]
    ) -> dict[int, tuple[int, list[Fact]]]:
        """By member: profile version and active facts."""
        return await self._db.read(profiles.member_profiles, guild_id, user_ids)

    async def members_due_by(
        self, guild_id: int, user_ids: Sequence[int], through: float
    ) -> set[int]:
        """The members with a pending update due at or before ``through``."""
        return await self._db.read(profiles.members_due_by, guild_id, user_ids, through)

    async def pending_updates(self, user_id: int | None = None) -> list[PendingUpdate]:
        """Pending updates (of one user, or all), oldest first."""
        return await self._db.read(profiles.pending_updates, user_id)

    async def update_context(
        self, guild_id: int, user_id: int, note_ids: Sequence[int]
    ) -> UpdateContext:
        """Everything one update call needs: version, facts, source notes and their lines."""
        return await self._db.read(profiles.update_context, guild_id, user_id, note_ids)

    async def apply_plan(
        self, guild_id: int, user_id: int, expected_version: int, plan: ProfilePlan, now: float
    ) -> bool:
        """Apply a plan if the profile is still at ``expected_version``; False otherwise."""
        return await self._db.write(
            profiles.apply_plan, guild_id, user_id, expected_version, plan, now
        )

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
        return await self._db.write(
            profiles.apply_updates, guild_id, user_id, version, plan, update_ids, now
        )

    async def mark_updates_applied(self, update_ids: Sequence[int], now: float) -> None:
        """Mark updates applied (their plan changed nothing)."""
        await self._db.write(profiles.mark_updates_applied, update_ids, now)

    async def record_update_failure(
        self, update_ids: Sequence[int], error: str, retry_at: float
    ) -> None:
        """Count a failed attempt on each update and set when to try again."""
        await self._db.write(profiles.record_update_failure, update_ids, error, retry_at)

    async def changed_between(self, guild_id: int, start: float, end: float) -> list[int]:
        """Members whose profile changed in [start, end)."""
        return await self._db.read(profiles.changed_between, guild_id, start, end)


class SqliteMemberStore:
    """Member storage on SQLite: :mod:`vivy.storage.members` run through the owner."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def opted_out_members(self) -> set[tuple[int, int]]:
        """(guild id, user id) of every member who opted out."""
        return await self._db.read(members.opted_out_members)

    async def add_member_names(self, guild_id: int, names: Sequence[tuple[int, str]]) -> None:
        """Remember that each (user id, name) goes by that name in the guild (an alias)."""

        def add(conn: Connection) -> None:
            for user_id, name in names:
                notes.add_member_name(conn, guild_id, user_id, name)

        await self._db.write(add)

    async def is_opted_out(self, guild_id: int, user_id: int) -> bool:
        """Whether the member opted out in this guild."""
        return await self._db.read(members.is_opted_out, guild_id, user_id)

    async def member_profile(self, guild_id: int, user_id: int) -> MemberProfile:
        """What Vivy remembers about the member, for ``/memory profile``."""
        return await self._db.read(members.member_profile, guild_id, user_id)

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
        return await self._db.write(
            members.remember_fact, guild_id, user_id, display_name, section, text, label, now
        )

    async def forget_facts(self, guild_id: int, user_id: int, query: str, now: float) -> list[str]:
        """Invalidate the member's facts matching ``query``; returns their texts."""
        return await self._db.write(members.forget_facts, guild_id, user_id, query, now)

    async def forget_member(self, guild_id: int, user_id: int) -> ForgetReport:
        """Remove everything remembered about the member in the guild, atomically."""
        return await self._db.write(members.forget_member, guild_id, user_id)

    async def set_opted_out(
        self, guild_id: int, user_id: int, display_name: str, opted_out: bool, now: float
    ) -> list[BufferedRef]:
        """Opt the member out (dropping their buffered messages) or back in."""
        return await self._db.write(
            members.set_opted_out, guild_id, user_id, display_name, opted_out, now
        )

    async def add_lore(self, guild_id: int, author_id: int, text: str, now: float) -> int:
        """Store a fact about the server; returns its id."""
        return await self._db.write(members.add_lore, guild_id, author_id, text, now)

    async def guild_status(self, guild_id: int) -> GuildStatus:
        """Counts of what is remembered in the guild, for ``/memory status``."""
        return await self._db.read(members.guild_status, guild_id)


class SqliteEvidenceStore:
    """Evidence storage on SQLite: :mod:`vivy.storage.evidence` run through the owner."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def prune_evidence(self, before: float) -> int:
        """Drop the evidence of notes that ended before ``before``; returns lines removed."""
        return await self._db.write(evidence.prune_evidence, before)

    async def windows_to_embed(self, limit: int) -> list[WindowText]:
        """Up to ``limit`` windows without an embedding, oldest first."""
        return await self._db.read(evidence.windows_to_embed, limit)

    async def set_window_embeddings(self, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
        """Store windows' new embeddings by window id."""
        await self._db.write(evidence.set_window_embeddings, vectors)


class SqliteJobStore:
    """Job storage on SQLite: :mod:`vivy.storage.jobs` run through the owner."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def completed_days(self) -> list[date]:
        """Days whose nightly job completed."""
        return await self._db.read(jobs.completed_days)

    async def first_note_time(self) -> float | None:
        """When the first note was created, or None."""
        return await self._db.read(jobs.first_note_time)

    async def guilds_with_notes(self, start: float, end: float) -> list[int]:
        """Guilds with conversation notes created in [start, end)."""
        return await self._db.read(jobs.guilds_with_notes, start, end)

    async def pass_done(self, guild_id: int, day: date, job_pass: str) -> bool:
        """Whether the pass already ran for the guild and day."""
        return await self._db.read(jobs.pass_done, guild_id, day, job_pass)

    async def record_pass(self, guild_id: int, day: date, job_pass: str, now: float) -> None:
        """Record a pass done."""
        await self._db.write(jobs.record_pass, guild_id, day, job_pass, now)

    async def record_run(self, day: date, now: float) -> None:
        """Record the day's job complete."""
        await self._db.write(jobs.record_run, day, now)

    async def tidy_keyword_indexes(self) -> bool:
        """Merge the FTS5 indexes' segments by one bounded step (:func:`fts.merge_step`);
        each step is a write of its own, so messages are stored between steps."""
        return await self._db.write(fts.merge_step)


class SqliteMetaStore:
    """Meta storage on SQLite: :mod:`vivy.storage.meta` run through the owner."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def get_meta(self, key: str) -> str | None:
        """The value stored under ``key``, or None."""
        return await self._db.read(meta.get_meta, key)

    async def adopt_embedding_model(self, model: str, dimension: int) -> EmbeddingModel | None:
        """Record the embedding model, or return the other one the notes were embedded with."""
        return await self._db.write(meta.adopt_embedding_model, model, dimension)


class SqliteReembedStore:
    """Reembed storage on SQLite: :mod:`vivy.storage.reembed` run through the owner."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def begin_staging(self, model_key: str) -> int:
        """Start or resume staging for ``model_key``; returns how many are staged already."""
        return await self._db.write(reembed.begin_staging, model_key)

    async def notes_to_embed(self, limit: int) -> list[NoteText]:
        """Up to ``limit`` notes without a staged vector, oldest first."""
        return await self._db.read(reembed.notes_to_embed, limit)

    async def stage_vectors(self, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
        """Keep new vectors until every note has one."""
        await self._db.write(reembed.stage_vectors, vectors)

    async def swap_note_vectors(self, model: str, dimension: int) -> int | None:
        """Swap every note vector for its staged one; None (no change) while one is missing."""
        return await self._db.write(reembed.swap_note_vectors, model, dimension)


class SqliteImportStore:
    """Import bookkeeping on SQLite: :mod:`vivy.storage.maintenance` run through the owner."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def fed_high_marks(self, channel_ids: Sequence[int]) -> dict[int, int]:
        """Each channel's highest stored message id (closed or open buffer)."""
        return await self._db.read(maintenance.fed_high_marks, channel_ids)

    async def note_counts(self) -> dict[str, int]:
        """Stored notes by type."""
        return dict(await self._db.read(maintenance.note_counts))

    async def fact_count(self) -> int:
        """Stored profile facts, active or not."""
        return await self._db.read(maintenance.count_rows, "profile_facts")

    async def outbox_state(self) -> OutboxState:
        """The pipeline's unfinished work."""
        return await self._db.read(maintenance.outbox_state)


class SqliteSearchStore:
    """Note search on SQLite: :mod:`vivy.storage.search` and :mod:`~vivy.storage.context_reads`
    run through the owner, with the guilds' binary vectors kept in memory
    (:class:`~vivy.storage.vector_index.BinaryIndex`) and the keyword searches of each search on
    the owner's side connections, beside the vector search."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._vectors = BinaryIndex()

    async def memory_version(self, guild_id: int) -> tuple[int | float | None, ...]:
        """A fingerprint of everything a guild's context is built from; it changes with it."""
        return await self._db.read(context_reads.memory_version, guild_id)

    async def find_notes(self, searches: Sequence[NoteSearch]) -> list[NoteSearchResult]:
        """Run each search and return its ranking candidates, in order (one owner call)."""
        vectors = self._vectors

        def find(conn: Connection, sides: tuple[Connection, ...]) -> list[NoteSearchResult]:
            return [search.search_notes_sync(conn, vectors, s, sides) for s in searches]

        return await self._db.read_with_sides(find)

    async def note_hits(
        self, guild_id: int, note_ids: Sequence[int], window_ids: Sequence[int]
    ) -> tuple[list[Note], dict[int, tuple[EvidenceLine, ...]]]:
        """The guild's notes by id in the order given, and the lines of each evidence window."""

        def read(conn: Connection) -> tuple[list[Note], dict[int, tuple[EvidenceLine, ...]]]:
            found, lines = search.load_hits(conn, guild_id, note_ids, window_ids)
            return found, {w: tuple(ls) for w, ls in lines.items()}

        return await self._db.read(read)

    async def find_and_load(
        self,
        guild_id: int,
        searches: Sequence[NoteSearch],
        choose: Callable[[list[NoteSearchResult]], Chosen[T]],
    ) -> Loaded[T]:
        """Search, choose and load in one owner call (see the port)."""
        vectors = self._vectors

        def find(conn: Connection, sides: tuple[Connection, ...]) -> Loaded[T]:
            results = [search.search_notes_sync(conn, vectors, s, sides) for s in searches]
            return chosen_and_loaded(
                results,
                choose,
                lambda notes, windows: search.load_hits(conn, guild_id, notes, windows),
            )

        return await self._db.read_with_sides(find)

    async def opted_out(self, guild_id: int, user_ids: Sequence[int]) -> set[int]:
        """The members among ``user_ids`` who opted out of memory in this guild."""
        return await self._db.read(context_reads.opted_out, guild_id, user_ids)

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
        return await self._db.read(
            context_reads.people_reads,
            guild_id,
            users,
            active,
            since=since,
            activity_limit=activity_limit,
            lore_limit=lore_limit,
        )

    async def member_card(self, guild_id: int, user_id: int, notes: int) -> MemberCard | None:
        """What the operator API shows of a member; None when the guild does not know them."""
        return await self._db.read(context_reads.member_card, guild_id, user_id, notes)
