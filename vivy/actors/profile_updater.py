"""ProfileUpdater actors: one per member with pending profile updates.

Each member's updates are serialised by their own actor, while different members proceed in
parallel under a concurrency limit. An update whose note call already returned the member's
operations is applied without a model call, provided the profile is still at the version
those operations were computed against or has changed only in ways they do not touch
(:func:`~vivy.state.profile.still_apply`); otherwise (or when the note call did not cover the
member) the actor coalesces its member's due updates into one flash call that returns
operations on the member's facts. Either way the operations are checked by
:func:`~vivy.state.profile.plan_operations` (grounding, injection, unknown ids, caps) and the
plan is written together with the "applied" marks in one transaction guarded by the profile
version. A failure leaves the updates pending for a retry with backoff. An actor with nothing
pending retires. A database that fails a read is waited for (:mod:`vivy.actors.outage`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import anyio
import structlog
from anyio.abc import TaskGroup

from vivy.actors.frontier import WriteFrontier
from vivy.actors.outage import Outage, until_stored
from vivy.clock import Clock
from vivy.errors import DatabaseUnavailable, LLMError, StorageError
from vivy.llm.port import LLM
from vivy.llm.prompts import profile_update_request
from vivy.llm.retry import Backoff
from vivy.llm.schemas import (
    FactView,
    NoteView,
    ProfileInput,
    TranscriptLine,
    decode_operations,
    fact_operations,
)
from vivy.memory.dates import source_label
from vivy.memory.facts import FactOperation, PendingUpdate, UpdateContext
from vivy.memory.guards import discloses_self
from vivy.state.profile import (
    PROFILE_CAP,
    FactSource,
    ProfileUpdateOutcome,
    Rejection,
    plan_operations,
    still_apply,
)
from vivy.storage.port import Store

__all__ = ["MAX_NOTES_PER_CALL", "ProfileObserver", "ProfileUpdaters"]

log = structlog.get_logger(__name__)

#: Most notes coalesced into one profile-update call.
MAX_NOTES_PER_CALL = 8

#: Retry schedule of a member's failed update: 30 s doubling up to an hour, jittered.
UPDATE_BACKOFF = Backoff(base_s=30.0, cap_s=3600.0)


class ProfileObserver(Protocol):
    """What the ProfileUpdaters report for metrics."""

    def profile_update(self, outcome: ProfileUpdateOutcome) -> None:
        """An update attempt ended with ``outcome``."""

    def fact_rejected(self, reason: Rejection) -> None:
        """A proposed operation was refused for ``reason``."""


@dataclass(frozen=True, slots=True)
class _Member:
    guild_id: int
    user_id: int


class ProfileUpdaters:
    """Supervises one actor per member with pending updates; see the module docstring."""

    def __init__(
        self,
        *,
        store: Store,
        llm: LLM,
        clock: Clock,
        observer: ProfileObserver,
        concurrency: int = 4,
        backoff: Backoff = UPDATE_BACKOFF,
        rng: random.Random | None = None,
        frontier: WriteFrontier | None = None,
        window_s: float = math.inf,
    ) -> None:
        self._profiles = store.profiles
        self._llm = llm
        self._clock = clock
        self._observer = observer
        self._backoff = backoff
        self._rng = rng or random.Random(0)
        self._limiter = anyio.CapacityLimiter(concurrency)
        self._frontier = frontier if frontier is not None else WriteFrontier()
        self._window_s = window_s
        self._wake: dict[_Member, anyio.Event] = {}
        #: Pending updates of each member with a running actor, as its actor last read them.
        self._pending: dict[_Member, int] = {}
        #: Members who had an update due when their actor last looked.
        self._due: set[_Member] = set()
        #: Set (and replaced) whenever an actor finishes a round of updates.
        self._progress = anyio.Event()
        self._tg: TaskGroup | None = None
        #: Whether :meth:`run` has ended (the app is stopping).
        self._stopped = False
        self._outage = Outage("profile updaters")

    @property
    def active(self) -> int:
        """Members whose actor is running."""
        return len(self._wake)

    @property
    def pending(self) -> int:
        """Pending profile updates, as the members' actors last read them (for the gauge)."""
        return sum(self._pending.values())

    @property
    def members_due(self) -> int:
        """Members with a profile update due, as their actors last saw them (each works
        through its own updates one call at a time)."""
        return len(self._due)

    def notify(self, guild_id: int, user_id: int) -> None:
        """A pending update for the member was committed: wake or start their actor.

        After :meth:`run` ended (a note committed while the app was stopping), nothing is
        started: the update is durable and the next start's scan applies it.
        """
        if self._stopped:
            return
        member = _Member(guild_id, user_id)
        wake = self._wake.get(member)
        if wake is not None:
            wake.set()
            return
        if self._tg is None:
            raise RuntimeError("ProfileUpdaters.run() must be started first")
        self._wake[member] = anyio.Event()
        self._tg.start_soon(self._member_actor, member)

    async def wait_settled(self, guild_id: int, user_ids: Sequence[int], through: float) -> None:
        """Return once none of these members has a pending update, on its first try, that
        came due before ``through``: a note that closed at ``through`` then reads their
        profiles as of its close, however long earlier calls took. Updates being retried
        after a failure are not waited for; an update due at ``through`` itself waits for the
        notes closed by then (the frontier), so the two never wait for each other."""
        while await self._profiles.members_due_by(guild_id, list(user_ids), through):
            progress = self._progress
            await progress.wait()

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Start an actor for every member with pending updates, then serve until cancelled."""
        pending = await until_stored(self._profiles.pending_updates, what="pending profile updates")
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                for update in pending:
                    self.notify(update.guild_id, update.user_id)
                task_status.started()
                await anyio.sleep_forever()
        finally:
            self._stopped = True

    async def _member_actor(self, member: _Member) -> None:
        bound = log.bind(guild_id=member.guild_id, user_id=member.user_id)
        while True:
            self._wake[member] = wake = anyio.Event()
            try:
                stored = await self._profiles.pending_updates(member.user_id)
            except DatabaseUnavailable as exc:
                await anyio.sleep(self._outage.failed(exc))
                continue
            if self._outage.failures:
                self._outage.recovered()
            pending = [u for u in stored if u.guild_id == member.guild_id]
            self._pending[member] = len(pending)
            now = self._clock.now()
            if any(u.next_attempt_at <= now for u in pending):
                self._due.add(member)
            else:
                self._due.discard(member)
            if any(u.next_attempt_at <= now for u in pending):
                due = min(u.next_attempt_at for u in pending)
                if not self._frontier.written_through(due):
                    # A note that closed before this update came due is still being written:
                    # wait for it, so the batch never depends on model latency.
                    await self._frontier.wait_written_through(due)
                    continue
                # Coalesce: once one update is due, the updates of notes that closed before
                # it came due (and any being retried) ride along, oldest first; all are
                # stamped with the due time.
                batch = sorted(
                    (
                        u
                        for u in pending
                        if u.next_attempt_at <= due + self._window_s or u.attempts > 0
                    ),
                    key=lambda u: (u.next_attempt_at, u.note_id),
                )
                try:
                    async with self._limiter:
                        await self._update(member, batch[:MAX_NOTES_PER_CALL], due, bound)
                except StorageError as exc:
                    # The updates stay pending; the next round reads them afresh.
                    bound.warning("profile update not written", error=str(exc))
                    self._observer.profile_update(ProfileUpdateOutcome.FAILED)
                    await anyio.sleep(self._backoff.base_s)
                finally:
                    self._progress.set()
                    self._progress = anyio.Event()
                continue
            if not pending and not wake.is_set():
                del self._wake[member]
                self._pending.pop(member, None)
                self._due.discard(member)
                return
            next_at = min((u.next_attempt_at for u in pending), default=math.inf)
            with anyio.move_on_at(self._clock.to_monotonic(next_at)):
                await wake.wait()

    async def _update(
        self,
        member: _Member,
        updates: list[PendingUpdate],
        due: float,
        bound: structlog.typing.FilteringBoundLogger,
    ) -> None:
        head = updates[0]
        ops = decode_operations(head.operations)
        if ops is not None:
            ctx = await self._profiles.update_context(
                member.guild_id, member.user_id, [head.note_id]
            )
            current = ctx.version == head.basis_version
            if not ops or current or still_apply([f.existing() for f in ctx.facts], ops):
                outcome = ProfileUpdateOutcome.APPLIED if ops else ProfileUpdateOutcome.SKIPPED
                await self._apply(member, ctx, [head], ops, due, bound, outcome)
                return
            # The profile changed since the note call read it in a way that touches its
            # operations (a fact they name is gone, a newer one on their subject they did
            # not see), so ask again.
            bound.debug("note-call operations are stale; asking again", note_id=head.note_id)
        note_ids = [u.note_id for u in updates]
        ctx = await self._profiles.update_context(member.guild_id, member.user_id, note_ids)
        own_name = next(
            (
                p.display_name
                for n in ctx.notes
                for p in n.participants
                if p.user_id == member.user_id
            ),
            str(member.user_id),
        )
        views = tuple(
            NoteView(
                id=note.id,
                title=note.title,
                summary=note.summary,
                date=note.note_date,
                participants=tuple(p.display_name for p in note.participants),
                lines=tuple(
                    TranscriptLine(a, name, text, at) for a, name, text, at in ctx.lines[note.id]
                ),
            )
            for note in ctx.notes
        )
        payload = ProfileInput(
            user_id=member.user_id,
            user_name=own_name,
            facts=tuple(FactView(f.id, f.section, f.text, f.source_label) for f in ctx.facts),
            notes=views,
            full=len(ctx.facts) >= PROFILE_CAP,
        )
        if not any(
            discloses_self(line.text)
            for view in views
            for line in view.lines
            if line.author_id == member.user_id
        ):
            # Facts must rest on the member's own words; without any, no call can add one.
            await self._profiles.mark_updates_applied([u.id for u in updates], due)
            self._observer.profile_update(ProfileUpdateOutcome.SKIPPED)
            return
        try:
            generation = await self._llm.generate(profile_update_request(payload))
        except LLMError as exc:
            self._observer.profile_update(ProfileUpdateOutcome.FAILED)
            attempts = max(u.attempts for u in updates) + 1
            retry_at = (
                self._clock.now() + self._backoff.delay(attempts, self._rng) + self._backoff.base_s
            )
            ids = [u.id for u in updates]
            await self._profiles.record_update_failure(ids, str(exc), retry_at)
            bound.warning("profile update failed; will retry", error=str(exc))
            return
        operations = fact_operations(generation.value.operations)
        await self._apply(
            member, ctx, updates, operations, due, bound, ProfileUpdateOutcome.APPLIED
        )

    async def _apply(
        self,
        member: _Member,
        ctx: UpdateContext,
        updates: list[PendingUpdate],
        operations: Sequence[FactOperation],
        due: float,
        bound: structlog.typing.FilteringBoundLogger,
        outcome: ProfileUpdateOutcome,
    ) -> None:
        """Check ``operations`` against the guards and write the plan with the applied marks,
        stamped with the time the updates came due (``due``).

        ``outcome`` is reported once the plan is written (``skipped`` when a note call found
        nothing to learn).
        """
        sources = {
            note.id: FactSource(
                note.id,
                source_label(note.title, note.note_date),
                "\n".join(text for a, _, text, _ in ctx.lines[note.id] if a == member.user_id),
            )
            for note in ctx.notes
        }
        plan = plan_operations([f.existing() for f in ctx.facts], operations, sources)
        written = await self._profiles.apply_updates(
            member.guild_id, member.user_id, ctx.version, plan, [u.id for u in updates], due
        )
        if not written:
            self._observer.profile_update(ProfileUpdateOutcome.CONFLICT_RETRIED)
            return
        for reason, _ in plan.rejected:
            self._observer.fact_rejected(reason)
        self._observer.profile_update(outcome)
        bound.info(
            "profile updated",
            notes=len(updates),
            added=len(plan.added),
            retired=len(plan.retired),
            rejected=len(plan.rejected),
        )
