"""The storage port's areas, written once over either engine's owner.

Each area of :class:`~vivy.storage.port.Store` is a class whose methods run one function of
its storage module (written once, :mod:`vivy.storage.dialect`) through the engine's owner: a
read as one read (:func:`reads`), a write as one committed transaction (:func:`writes`). The
owner hands the function its :class:`Tx` (SQLite's as it is; PostgreSQL's with the process's
shards and fence), so a method's signature and docstring are its function's, minus the
transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from vivy.storage import (
    buffers,
    context_reads,
    evidence,
    guilds,
    jobs,
    maintenance,
    members,
    memory_page,
    meta,
    notes,
    profiles,
    reembed,
)
from vivy.storage.candidates import chosen_and_loaded
from vivy.storage.dialect import Tx
from vivy.storage.search_types import Chosen, Loaded, NoteSearch, NoteSearchResult

__all__ = [
    "Area",
    "BufferStore",
    "EvidenceStore",
    "ImportStore",
    "JobStore",
    "MemberStore",
    "MetaStore",
    "NoteStore",
    "Owner",
    "PageStore",
    "ProfileStore",
    "ReembedStore",
    "SearchOne",
    "SearchStore",
    "SidesOwner",
    "reads",
    "writes",
]

P = ParamSpec("P")
T = TypeVar("T")


class Owner(Protocol):
    """An engine's one owner of its connection (:class:`~vivy.storage.sqlite.db.Database`,
    :class:`~vivy.storage.postgres.db.PgDatabase`)."""

    async def read(
        self, fn: Callable[Concatenate[Tx, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run ``fn(tx, *args, **kwargs)`` as a read."""

    async def write(
        self, fn: Callable[Concatenate[Tx, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run ``fn(tx, *args, **kwargs)`` in one committed transaction."""


class Area:
    """One area of the port over ``owner``."""

    def __init__(self, owner: Owner) -> None:
        self._owner = owner


#: An area's method: an ``async`` function of the area and the storage function's arguments.
Method = Callable[Concatenate[Area, P], Coroutine[Any, Any, T]]


def _method(fn: Callable[Concatenate[Tx, P], T], write: bool) -> Method[P, T]:
    async def method(self: Area, /, *args: P.args, **kwargs: P.kwargs) -> T:
        if write:
            return await self._owner.write(fn, *args, **kwargs)
        return await self._owner.read(fn, *args, **kwargs)

    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def reads(
    fn: Callable[Concatenate[Tx, P], T],
) -> Callable[Concatenate[Area, P], Coroutine[Any, Any, T]]:
    """An area method running ``fn`` as one read."""
    return _method(fn, write=False)


def writes(
    fn: Callable[Concatenate[Tx, P], T],
) -> Callable[Concatenate[Area, P], Coroutine[Any, Any, T]]:
    """An area method running ``fn`` in one committed transaction."""
    return _method(fn, write=True)


class BufferStore(Area):
    """Open channel buffers, their message rows and the closed-buffer outbox
    (:mod:`vivy.storage.buffers`)."""

    open_buffer = writes(buffers.open_buffer)
    append_messages = writes(buffers.append_messages)
    edit_message = writes(buffers.edit_stored_message)
    delete_message = writes(buffers.delete_stored_message)
    close_buffer = writes(buffers.close_buffer)
    apply_effects = writes(buffers.apply_effects)
    restore_channel = reads(buffers.restore_channel)
    watermark = reads(buffers.watermark)
    open_buffer_rows = reads(buffers.open_buffer_rows)
    open_channels = reads(buffers.open_channels)
    closed_buffer_ids = reads(buffers.closed_buffer_ids)
    load_buffer = reads(buffers.load_buffer)
    record_note_failure = writes(buffers.record_note_failure)


class NoteStore(Area):
    """Conversation notes and topic clusters (:mod:`vivy.storage.notes`)."""

    commit_conversation_note = writes(notes.commit_conversation_note)
    discard_buffer = writes(notes.discard_buffer)
    commit_cluster_notes = writes(notes.commit_cluster_notes)
    get_notes = reads(notes.get_notes)
    notes_between = reads(notes.notes_between)


class EvidenceStore(Area):
    """Notes' evidence: retention and re-embedding (:mod:`vivy.storage.evidence`)."""

    prune_evidence = writes(evidence.prune_evidence)
    windows_to_embed = reads(evidence.windows_to_embed)
    set_window_embeddings = writes(evidence.set_window_embeddings)


class ProfileStore(Area):
    """Members' profile facts and the pending profile updates (:mod:`vivy.storage.profiles`)."""

    active_facts = reads(profiles.active_facts)
    profile_version = reads(profiles.profile_version)
    member_profiles = reads(profiles.member_profiles)
    members_due_by = reads(profiles.members_due_by)
    pending_updates = reads(profiles.pending_updates)
    update_context = reads(profiles.update_context)
    apply_plan = writes(profiles.apply_plan)
    apply_updates = writes(profiles.apply_updates)
    mark_updates_applied = writes(profiles.mark_updates_applied)
    record_update_failure = writes(profiles.record_update_failure)
    changed_between = reads(profiles.changed_between)


class MemberStore(Area):
    """Members' own commands (:mod:`vivy.storage.members`)."""

    opted_out_members = reads(members.opted_out_members)
    add_member_names = writes(notes.add_member_names)
    set_guild_names = writes(guilds.set_guild_names)
    is_opted_out = reads(members.is_opted_out)
    member_profile = reads(members.member_profile)
    remember_fact = writes(members.remember_fact)
    forget_facts = writes(members.forget_facts)
    forget_member = writes(members.forget_member)
    set_opted_out = writes(members.set_opted_out)
    add_lore = writes(members.add_lore)
    guild_status = reads(members.guild_status)


class JobStore(Area):
    """The nightly job's log (:mod:`vivy.storage.jobs`); the keyword indexes' upkeep is the
    engine's (``tidy``: one bounded step, True while another has work to do)."""

    completed_days = reads(jobs.completed_days)
    first_note_time = reads(jobs.first_note_time)
    guilds_with_notes = reads(jobs.guilds_with_notes)
    pass_done = reads(jobs.pass_done)
    record_pass = writes(jobs.record_pass)
    record_run = writes(jobs.record_run)
    scale_sample = reads(evidence.scale_sample)

    def __init__(self, owner: Owner, tidy: Callable[[Tx], bool]) -> None:
        super().__init__(owner)
        self._tidy = tidy

    async def tidy_keyword_indexes(self) -> bool:
        """One bounded step of the keyword indexes' nightly upkeep (a write of its own, so
        messages are stored between steps); True while another step has work to do."""
        return await self._owner.write(self._tidy)


class MetaStore(Area):
    """Facts about the database itself (:mod:`vivy.storage.meta`)."""

    get_meta = reads(meta.get_meta)
    set_meta = writes(meta.set_meta)
    adopt_embedding_model = writes(meta.adopt_embedding_model)
    other_embedding_model = reads(meta.other_embedding_model)


class ReembedStore(Area):
    """``vivy reembed``'s staged vectors (:mod:`vivy.storage.reembed`)."""

    begin_staging = writes(reembed.begin_staging)
    notes_to_embed = reads(reembed.notes_to_embed)
    stage_vectors = writes(reembed.stage_vectors)
    swap_note_vectors = writes(reembed.swap_note_vectors)


class ImportStore(Area):
    """The bookkeeping of ``vivy import`` (:mod:`vivy.storage.maintenance`)."""

    fed_high_marks = reads(maintenance.fed_high_marks)
    note_counts = reads(maintenance.note_counts)
    fact_count = reads(maintenance.fact_count)
    outbox_state = reads(maintenance.outbox_state)


class PageStore(Area):
    """The memory page's reads and corrections (:mod:`vivy.storage.memory_page`)."""

    guild_ids = reads(memory_page.guild_ids)
    guild_names = reads(guilds.guild_names)
    newest_day = reads(memory_page.newest_day)
    timeline = reads(memory_page.timeline)
    activity = reads(memory_page.activity)
    members = reads(memory_page.members)
    member = reads(memory_page.member)
    fact_history = reads(memory_page.fact_history)
    guild_facts = reads(memory_page.guild_facts)
    note = reads(memory_page.note)
    job_log = reads(memory_page.job_log)
    health = reads(memory_page.health)
    corrections = reads(memory_page.corrections)
    remove_fact = writes(memory_page.remove_fact)
    remove_note = writes(memory_page.remove_note)
    forget_member = writes(memory_page.forget_member)


class SidesOwner(Owner, Protocol):
    """An owner that also lends a read its side connections (:meth:`read_with_sides`)."""

    async def read_with_sides(self, fn: Callable[[Tx, tuple[Any, ...]], T], /) -> T:
        """Run ``fn(tx, sides)`` as a read."""


#: One engine's note search: (transaction, side connections, search) -> its result.
SearchOne = Callable[[Tx, tuple[Any, ...], NoteSearch], NoteSearchResult]


class SearchStore(Area):
    """Note search and the reads a reply's memory context is built from. The context reads
    are written once (:mod:`vivy.storage.context_reads`); ``search_one`` is the engine's
    note search (FTS5 and sqlite-vec, or postings and pgvector), run with the owner's side
    connections for its keyword searches."""

    memory_version = reads(context_reads.memory_version)
    note_hits = reads(notes.note_hits)
    opted_out = reads(context_reads.opted_out)
    people = reads(context_reads.people_reads)
    member_card = reads(context_reads.member_card)
    get_meta = reads(meta.get_meta)

    def __init__(self, owner: SidesOwner, search_one: SearchOne) -> None:
        super().__init__(owner)
        self._sides_owner = owner
        self._search_one = search_one

    async def find_notes(self, searches: Sequence[NoteSearch]) -> list[NoteSearchResult]:
        """Run each search (vector, keyword, evidence, time, names) and return its ranking
        candidates, in order, in one read. A failing vector search is reported in its
        result."""
        search_one = self._search_one

        def find(tx: Tx, sides: tuple[Any, ...]) -> list[NoteSearchResult]:
            return [search_one(tx, sides, search) for search in searches]

        return await self._sides_owner.read_with_sides(find)

    async def find_and_load(
        self,
        guild_id: int,
        searches: Sequence[NoteSearch],
        choose: Callable[[list[NoteSearchResult]], Chosen[T]],
    ) -> Loaded[T]:
        """:meth:`find_notes`, then ``choose`` (pure: it runs on the owner's thread) picks
        from the results, then :meth:`note_hits` of what it picked, in one read."""
        search_one = self._search_one

        def find(tx: Tx, sides: tuple[Any, ...]) -> Loaded[T]:
            results = [search_one(tx, sides, search) for search in searches]
            return chosen_and_loaded(
                results,
                choose,
                lambda found, evidence_of: notes.note_hits(tx, guild_id, found, evidence_of),
            )

        return await self._sides_owner.read_with_sides(find)
