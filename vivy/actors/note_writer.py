"""The NoteWriter actor: turns closed buffers into conversation notes.

It takes buffer ids from the channel actors (and, at start-up, every closed buffer still in
the outbox), and for each one either discards it (fewer messages than the minimum, no LLM
call) or asks the flash model for a note, embeds the note's contextualised text and its
evidence windows (one batched embedding call), and commits note, embeddings, evidence,
participants, buffer deletion and one pending profile update per participant in one
transaction. The same call returns the profile operations of the participants chosen by
:func:`~vivy.state.profile.choose_note_members`, however full their profiles (each is sent
with the facts their lines could touch, within a token budget); their update rows carry
those operations, so applying them needs no model call.
A failure leaves the buffer pending; it is retried with backoff. This part of a buffer's life
is the outbox's: a closed row stays until its note is committed. A database that fails a
call (a restart, a partition) only delays the buffer: it is queued again a few seconds later
(:mod:`vivy.actors.outage`), and the outbox scans wait for the database to answer.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Protocol

import anyio
import structlog

from vivy.actors.due import DueQueue, retry_delay
from vivy.actors.frontier import WriteFrontier
from vivy.actors.outage import Outage, until_stored
from vivy.clock import Clock
from vivy.errors import DatabaseUnavailable, LLMError
from vivy.llm.port import LLM, EmbeddingTask
from vivy.llm.prompts import note_request
from vivy.llm.retry import Backoff
from vivy.llm.schemas import (
    ConversationDraft,
    FactView,
    MemberFacts,
    NoteDraft,
    NoteInput,
    ProfileOperation,
    TranscriptLine,
    encode_operations,
    uncited,
)
from vivy.memory.dates import note_date
from vivy.memory.evidence import pooled_windows, window_lines, windows_of
from vivy.memory.facts import Fact
from vivy.memory.guards import clean_note
from vivy.memory.notes import NewNote, NoteType, Participant, PlannedUpdate
from vivy.state.profile import PROFILE_CAP, MemberChoice, choose_note_members, note_facts
from vivy.storage.port import Store

__all__ = [
    "NoteObserver",
    "NoteWriter",
    "ProfileNotifier",
    "contextual_text",
]

log = structlog.get_logger(__name__)

#: Retry schedule of a buffer whose note failed: 30 s doubling up to an hour, jittered.
OUTBOX_BACKOFF = Backoff(base_s=30.0, cap_s=3600.0)


class ProfileNotifier(Protocol):
    """Where new pending profile updates are announced (the ProfileUpdater)."""

    def notify(self, guild_id: int, user_id: int) -> None:
        """A pending profile update for this member was committed."""

    async def wait_settled(self, guild_id: int, user_ids: Sequence[int], through: float) -> None:
        """Return once none of these members has a first-try update due before ``through``."""


class NoteObserver(Protocol):
    """What the NoteWriter reports for metrics."""

    def note_written(self, note_type: NoteType) -> None:
        """A note of ``note_type`` was committed."""

    def buffer_discarded(self) -> None:
        """A buffer had too few messages to become a note."""


def contextual_text(
    channel_name: str,
    day: str,
    participants: list[str],
    topics: list[str],
    title: str,
    summary: str,
) -> str:
    """The text embedded for a note: a context header, then title and summary."""
    header = [
        f"Channel: #{channel_name}" if channel_name else "Channel: (unknown)",
        f"Date: {day}",
        f"Participants: {', '.join(participants)}",
    ]
    if topics:
        header.append(f"Topics: {', '.join(topics)}")
    return "\n".join(header) + f"\n\n{title}\n{summary}"


def _returned_operations(draft: NoteDraft) -> dict[int, list[ProfileOperation]]:
    """The operations the note answer holds per member (first entry wins); none in a bare note."""
    if not isinstance(draft, ConversationDraft):
        return {}
    found: dict[int, list[ProfileOperation]] = {}
    for entry in draft.profiles:
        found.setdefault(entry.user_id, uncited(entry.operations))
    return found


def _planned_updates(
    draft: NoteDraft,
    choice: MemberChoice,
    versions: dict[int, int],
) -> dict[int, PlannedUpdate]:
    """The update rows that need no call: silent members' (nothing) and answered members'.

    A member the call covered but the answer left out keeps a separate call, as does any
    member the call did not cover; operations for members it did not cover are ignored.
    """
    planned = {user: PlannedUpdate(encode_operations([]), versions[user]) for user in choice.silent}
    returned = _returned_operations(draft)
    for user in choice.combined:
        if user in returned:
            planned[user] = PlannedUpdate(
                encode_operations(returned[user]),
                versions[user],
            )
    return planned


class NoteWriter:
    """Writes conversation notes; see the module docstring."""

    def __init__(
        self,
        *,
        store: Store,
        llm: LLM,
        clock: Clock,
        profiles: ProfileNotifier,
        observer: NoteObserver,
        min_messages: int = 2,
        profile_delay_s: float = 0.0,
        backoff: Backoff = OUTBOX_BACKOFF,
        concurrency: int = 2,
        rng: random.Random | None = None,
        keep_evidence: bool = True,
        frontier: WriteFrontier | None = None,
    ) -> None:
        self._store = store
        self._llm = llm
        self._clock = clock
        self._profiles = profiles
        self._observer = observer
        self._min_messages = min_messages
        self._profile_delay_s = profile_delay_s
        self._backoff = backoff
        self._rng = rng or random.Random(0)
        self._keep_evidence = keep_evidence
        self._slots = anyio.Semaphore(concurrency)
        self._queue: DueQueue[int] = DueQueue(clock)
        self._in_flight: set[int] = set()
        self._frontier = frontier if frontier is not None else WriteFrontier()
        self._rescan_wanted = anyio.Event()
        self._outage = Outage("note writer")

    def hand_off(self, buffer_id: int) -> None:
        """Take a closed buffer (its outbox row is already committed); never blocks."""
        now = self._clock.now()
        self._frontier.add(buffer_id, now)
        self._queue.put(buffer_id, now)

    def request_rescan(self) -> None:
        """Scan the outbox again soon: a channel actor crashed, maybe between close and hand-off."""
        self._rescan_wanted.set()

    @property
    def backlog(self) -> int:
        """Buffers queued or being written."""
        return len(self._queue) + len(self._in_flight)

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Re-queue every closed buffer of the outbox, then write notes until cancelled.

        The outbox is scanned again on :meth:`request_rescan` (never on a timer, so an idle
        process sleeps), so a buffer whose hand-off was lost (its channel actor crashed right
        after closing it) is still written.
        """
        await self._rescan()
        task_status.started()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._rescan_on_request)
            while True:
                buffer_id = await self._queue.get()
                if buffer_id in self._in_flight:
                    continue
                await self._slots.acquire()
                self._in_flight.add(buffer_id)
                tg.start_soon(self._write_released, buffer_id)

    async def _rescan(self) -> None:
        closed = await until_stored(self._store.buffers.closed_buffer_ids, what="outbox scan")
        for buffer_id, due in closed:
            if buffer_id not in self._in_flight:
                self._frontier.add(buffer_id, due)
                self._queue.put(buffer_id, due)

    async def _rescan_on_request(self) -> None:
        while True:
            await self._rescan_wanted.wait()
            self._rescan_wanted = anyio.Event()
            await self._rescan()

    async def _write_released(self, buffer_id: int) -> None:
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                self._slots.release()

        try:
            await self.write(buffer_id, before_commit=release)
            if self._outage.failures:
                self._outage.recovered()
        except DatabaseUnavailable as exc:
            # The buffer stays in the outbox: try it again once the database may be back.
            delay = self._outage.failed(exc)
            self._queue.put(buffer_id, self._clock.now() + delay)
        finally:
            release()
            self._in_flight.discard(buffer_id)
            self._frontier.done(buffer_id)

    @staticmethod
    def _member_facts(user_id: int, name: str, facts: list[Fact], own_text: str) -> MemberFacts:
        """A member as sent with the note: the facts their lines could touch, most relevant
        first, within the per-member token budget, and the size of their whole profile."""
        by_id = {fact.id: fact for fact in facts}
        views = tuple(
            FactView(fact.id, fact.section, fact.text, by_id[fact.id].source_label)
            for fact in note_facts([f.existing() for f in facts], own_text)
        )
        return MemberFacts(user_id, name, views, len(facts), len(facts) >= PROFILE_CAP)

    async def write(
        self, buffer_id: int, *, before_commit: Callable[[], None] | None = None
    ) -> int | None:
        """Write (or discard) one closed buffer; returns the note id if one was committed.

        Once the model has answered, ``before_commit`` is called (the writer frees the
        buffer's slot for the next call) and the note waits for its turn: notes commit in
        the order their conversations closed.
        """
        bound = log.bind(buffer_id=buffer_id)
        stored = await self._store.buffers.load_buffer(buffer_id)
        if stored is None or stored.row.status != "closed":
            return None  # already noted or discarded
        row = stored.row
        bound = bound.bind(guild_id=row.guild_id, channel_id=row.channel_id)
        if len(stored.messages) < self._min_messages:
            if await self._store.notes.discard_buffer(buffer_id):
                self._observer.buffer_discarded()
                bound.debug("buffer too small for a note; discarded", messages=len(stored.messages))
            return None
        lines_of = stored.messages
        lines = tuple(
            TranscriptLine(m.author_id, m.author_name, m.text, m.created_at)
            for m in stored.messages
        )
        counts = Counter(m.author_id for m in stored.messages)
        names = {m.author_id: m.author_name for m in stored.messages}
        day = note_date(row.started_at)
        own = {
            user: "\n".join(m.text for m in stored.messages if m.author_id == user)
            for user in counts
        }
        # The note call sees its members' profiles as of the conversation's close, whatever
        # the model's latency: updates that came due before it are applied first.
        closed_at = row.closed_at if row.closed_at is not None else row.last_message_at
        await self._profiles.wait_settled(row.guild_id, list(counts), closed_at)
        profiles = await self._store.profiles.member_profiles(row.guild_id, list(counts))
        choice = choose_note_members([(user, own[user]) for user, _ in counts.most_common()])
        members = tuple(
            self._member_facts(user, names[user], profiles[user][1], own[user])
            for user in choice.combined
        )
        try:
            generation = await self._llm.generate(
                note_request(
                    NoteInput(row.guild_id, row.channel_id, row.channel_name, lines, members)
                )
            )
            content = clean_note(generation.value.content(), f"Conversation in #{row.channel_name}")
            text = contextual_text(
                row.channel_name,
                day,
                [names[user] for user in counts],
                list(content.topics),
                content.title,
                content.summary,
            )
            windows = (
                windows_of([(m.message_id, m.author_name, m.text) for m in lines_of])
                if self._keep_evidence
                else []
            )
            texts = [w.text for w in windows]
            said = window_lines(texts)
            vectors = await self._llm.embed([text, *said], EmbeddingTask.DOCUMENT)
            embedding = vectors[0]
            window_vectors = pooled_windows(texts, said, vectors[1:], [embedding] * len(texts))
        except LLMError as exc:
            delay = retry_delay(self._backoff, row.attempts + 1, self._rng)
            retry_at = self._clock.now() + delay
            await self._store.buffers.record_note_failure(buffer_id, str(exc), retry_at)
            self._queue.put(buffer_id, retry_at)
            bound.warning("note failed; will retry", error=str(exc), retry_in_s=round(delay, 1))
            return None
        participants = tuple(
            Participant(user, names[user], count) for user, count in counts.items()
        )
        note = NewNote(
            guild_id=row.guild_id,
            channel_id=row.channel_id,
            channel_name=row.channel_name,
            note_type=NoteType.CONVERSATION,
            title=content.title,
            summary=content.summary,
            topics=content.topics,
            decisions=content.decisions,
            open_questions=content.open_questions,
            entities=content.entities,
            participants=participants,
            note_date=day,
            quality=generation.quality,
            model=generation.model,
            embedding=embedding,
            windows=tuple(windows),
            window_embeddings=tuple(window_vectors),
            # Stamped by the conversation's close, not by when the model answered: its
            # profile updates then come due at the same time however long the call took.
            created_at=row.closed_at if row.closed_at is not None else self._clock.now(),
            started_at=row.started_at,
            ended_at=max(m.created_at for m in stored.messages) or row.last_message_at,
        )
        if before_commit is not None:
            before_commit()
        await self._frontier.wait_turn(buffer_id)
        note_id = await self._store.notes.commit_conversation_note(
            buffer_id,
            note,
            updates_due_at=note.created_at + self._profile_delay_s,
            planned=_planned_updates(
                generation.value, choice, {user: version for user, (version, _) in profiles.items()}
            ),
        )
        if note_id is None:
            return None
        self._observer.note_written(NoteType.CONVERSATION)
        bound.info(
            "note written",
            note_id=note_id,
            participants=len(participants),
            profiles_in_note=len(choice.combined),
            profiles_separate=len(choice.separate),
        )
        for participant in participants:
            self._profiles.notify(row.guild_id, participant.user_id)
        return note_id
