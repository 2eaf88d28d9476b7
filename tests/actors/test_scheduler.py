"""The Scheduler under trio's MockClock: midnights, catch-up, resumable passes, and which
profiles the nightly consolidation reads."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TypeVar

import anyio
import pytest

import vivy.actors.scheduler as scheduler_module
from vivy.app import App, running_app
from vivy.clock import Clock
from vivy.config import BufferSettings, Settings
from vivy.errors import LLMUnavailable
from vivy.llm.offline import OfflineLLM
from vivy.llm.port import Generation, GenerationRequest, Operation
from vivy.llm.schemas import ProfileInput
from vivy.memory.facts import NewFact
from vivy.memory.scales import SimilarityScale, scale_key
from vivy.state.profile import CONSOLIDATION_FACT_TOKENS, ProfilePlan, estimate_tokens

from .harness import message

pytestmark = pytest.mark.anyio

T = TypeVar("T")


def utc(text: str) -> float:
    """Epoch seconds of an ISO UTC time."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def settings(path: Path, zone: str = "UTC") -> Settings:
    """Settings with a fixed 25-minute window and clustering from three notes."""
    return Settings(
        database=path,
        buffers=BufferSettings(inactivity_min_s=1500.0, inactivity_max_s=1500.0),
        timezone=zone,
        min_cluster_notes=3,
        profile_delay_s=0.0,
    )


def clock_at(wall: float) -> Clock:
    """A clock whose wall time is ``wall`` now."""
    return Clock.starting_at(wall)


def offline_app(
    path: Path, wall: float, *, scheduler: bool = True
) -> AbstractAsyncContextManager[App]:
    """The app on the database at ``path``, inline, offline, its clock at ``wall``."""
    return running_app(
        settings(path), clock=clock_at(wall), inline=True, llm=OfflineLLM(), scheduler=scheduler
    )


TOPICS = [
    [
        (11, "I love JRPGs, anyone played the new Persona?"),
        (12, "Persona is great, I prefer Metaphor"),
    ],
    [(11, "I work at Dell as a QA engineer"), (13, "Dell QA sounds fun, I use Neovim at work")],
    [(12, "I live in Austin and the tacos here are great"), (13, "Austin tacos are the best")],
]


async def chat_three_conversations(app: App, first_id: int) -> None:
    """Three conversations an hour apart, each closing by inactivity."""
    message_id = first_id
    for lines in TOPICS:
        for author, text in lines:
            await app.router.ingest(message(message_id, author=author, text=text))
            message_id += 1
            await anyio.sleep(60)
        await anyio.sleep(3600)


async def count(app: App, sql: str) -> int:
    """One integer from a query."""
    return int(await app.db.read(lambda c: c.execute(sql).fetchone()[0]))


async def test_job_fires_at_midnight(tmp_path: Path) -> None:
    """The job for a day runs exactly at the next midnight and writes its clusters."""
    async with running_app(
        settings(tmp_path / "v.db"),
        clock=clock_at(utc("2026-03-02T12:00:00")),
        inline=True,
        llm=OfflineLLM(),
    ) as app:
        await chat_three_conversations(app, 1)
        await anyio.sleep_until(app.clock.to_monotonic(utc("2026-03-03T00:00:01")))
        assert [(r.day, r.ran_at) for r in app.scheduler.reports] == [
            (date(2026, 3, 2), utc("2026-03-03T00:00:00"))
        ]
        assert app.scheduler.reports[0].clusters >= 1
        assert await count(app, "SELECT COUNT(*) FROM memory_job_log") == 2


async def test_job_fires_at_local_midnight_across_dst(tmp_path: Path) -> None:
    """In New York the job runs at local midnight before and after the spring-forward day."""
    async with running_app(
        settings(tmp_path / "v.db", "America/New_York"),
        clock=clock_at(utc("2026-03-07T17:00:00")),
        inline=True,
        llm=OfflineLLM(),
    ) as app:
        await anyio.sleep_until(app.clock.to_monotonic(utc("2026-03-09T12:00:00")))
        assert [(r.day, r.ran_at) for r in app.scheduler.reports] == [
            (date(2026, 3, 7), utc("2026-03-08T05:00:00")),
            (date(2026, 3, 8), utc("2026-03-09T04:00:00")),
        ]


async def test_three_days_down_catch_up_in_order(tmp_path: Path) -> None:
    """After three days down, start-up runs the three missed days in order before it completes."""
    path = tmp_path / "v.db"
    async with offline_app(path, utc("2026-03-02T12:00:00")) as app:
        await chat_three_conversations(app, 1)
        assert app.scheduler.reports == []
    async with offline_app(path, utc("2026-03-05T09:00:00")) as again:
        assert [r.day for r in again.scheduler.reports] == [
            date(2026, 3, 2),
            date(2026, 3, 3),
            date(2026, 3, 4),
        ]
        assert all(r.ran_at == utc("2026-03-05T09:00:00") for r in again.scheduler.reports)


class FailingConsolidation(OfflineLLM):
    """The offline provider, except that profile consolidation is unavailable."""

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """Fail consolidation calls; answer everything else offline."""
        if request.operation is Operation.PROFILE_CONSOLIDATION:
            raise LLMUnavailable("consolidation model down")
        return await super().generate(request)


async def test_interrupted_job_resumes_with_pass_two_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job stopped between pass 1 and pass 2 resumes with pass 2 and no duplicate clusters."""
    # Consolidate every changed profile: this test is about the pass, not its gate.
    monkeypatch.setattr(scheduler_module, "needs_consolidation", lambda facts, changed: True)
    path = tmp_path / "v.db"
    async with running_app(
        settings(path),
        clock=clock_at(utc("2026-03-02T12:00:00")),
        inline=True,
        llm=FailingConsolidation(),
    ) as app:
        await chat_three_conversations(app, 1)
        report = await app.scheduler.run_day(date(2026, 3, 2))
        assert report.clusters >= 1 and not report.complete
        clusters = await count(
            app, "SELECT COUNT(*) FROM interaction_notes WHERE note_type = 'topic_cluster'"
        )
    async with offline_app(path, utc("2026-03-02T23:00:00"), scheduler=False) as again:
        report = await again.scheduler.run_day(date(2026, 3, 2))
        assert report.complete and report.clusters == 0 and report.consolidated == 3
        assert report.skipped_passes == ["100:clusters"]
        after = await count(
            again, "SELECT COUNT(*) FROM interaction_notes WHERE note_type = 'topic_cluster'"
        )
        assert after == clusters
        assert await count(again, "SELECT COUNT(*) FROM scheduler_runs") == 1


async def test_nightly_job_prunes_evidence_past_retention(tmp_path: Path) -> None:
    """With VIVY_EVIDENCE_DAYS=1, a day's conversations keep their evidence through the first
    midnight and lose it at the second; the notes themselves stay."""
    kept = Settings(
        database=tmp_path / "v.db",
        buffers=BufferSettings(inactivity_min_s=1500.0, inactivity_max_s=1500.0),
        min_cluster_notes=3,
        profile_delay_s=0.0,
        evidence_days=1.0,
    )
    async with running_app(
        kept, clock=clock_at(utc("2026-03-02T12:00:00")), inline=True, llm=OfflineLLM()
    ) as app:
        await chat_three_conversations(app, 1)
        await anyio.sleep_until(app.clock.to_monotonic(utc("2026-03-03T00:00:01")))
        assert await count(app, "SELECT COUNT(*) FROM evidence_windows") == 3
        await anyio.sleep_until(app.clock.to_monotonic(utc("2026-03-04T00:00:01")))
        assert await count(app, "SELECT COUNT(*) FROM evidence_windows") == 0
        assert [r.evidence_pruned for r in app.scheduler.reports] == [0, 3]
        assert await count(app, "SELECT COUNT(*) FROM interaction_notes") >= 3
        # Each night also merged the keyword indexes the day's writes left in segments
        # (the evidence index is empty once retention dropped every window).
        assert all(r.index_steps >= 1 for r in app.scheduler.reports)
        for index, segments in (("notes_fts", 1), ("evidence_fts", 0)):
            assert await count(app, f"SELECT COUNT(DISTINCT segid) FROM {index}_idx") == segments


class RecordingConsolidation(OfflineLLM):
    """The offline provider, keeping the payload of every consolidation call."""

    def __init__(self) -> None:
        super().__init__()
        self.consolidated: list[ProfileInput] = []

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """Record consolidation payloads; answer everything offline."""
        if request.operation is Operation.PROFILE_CONSOLIDATION:
            assert isinstance(request.payload, ProfileInput)
            self.consolidated.append(request.payload)
        return await super().generate(request)


async def test_only_profiles_with_overlapping_new_facts_are_consolidated(tmp_path: Path) -> None:
    """Of the members who gained facts that day, only one whose new fact overlaps another is
    consolidated, and the call reads the overlapping facts first, within its token budget."""
    llm = RecordingConsolidation()
    async with running_app(
        settings(tmp_path / "v.db"),
        clock=clock_at(utc("2026-03-02T12:00:00")),
        inline=True,
        llm=llm,
        scheduler=False,
    ) as app:
        old = [
            NewFact("other", f"Keeps a long diary of every trip number {n} " * 3, "note", None, "x")
            for n in range(30)
        ]
        await app.store.profiles.apply_plan(100, 11, 0, ProfilePlan(added=old), 0.0)
        await chat_three_conversations(app, 1)
        version = await app.store.profiles.profile_version(100, 11)
        lead = NewFact("bio", "Works at Dell as a QA lead", "note", None, "x")
        await app.store.profiles.apply_plan(
            100, 11, version, ProfilePlan(added=[lead]), utc("2026-03-02T20:00:00")
        )
        changed = await app.store.profiles.changed_between(
            100, utc("2026-03-02T00:00:00"), utc("2026-03-03T00:00:00")
        )
        report = await app.scheduler.run_day(date(2026, 3, 2))
    assert set(changed) == {11, 12, 13}
    assert report.consolidated == 1
    (payload,) = llm.consolidated
    assert payload.user_id == 11
    shown = [fact.text for fact in payload.facts]
    assert set(shown[:2]) == {"Works at Dell as a QA lead", "Works at Dell as a QA engineer"}
    assert len(shown) < 30
    lines = [f"{f.id} {f.section}: {f.text}" for f in payload.facts]
    assert sum(estimate_tokens(line) for line in lines) <= CONSOLIDATION_FACT_TOKENS


SUBJECTS = [
    ("I adopted a puppy, a beagle named Biscuit", "a beagle puppy! does Biscuit chew shoes?"),
    ("my sourdough starter finally rose", "sourdough bread takes patience, what flour?"),
    ("we signed the lease on the new apartment", "congrats on the apartment, big kitchen?"),
    ("I run the marathon in Boston next spring", "Boston marathon training sounds brutal"),
    ("the violin recital is on Friday", "good luck with the violin recital"),
    ("my laptop battery died again", "that laptop needs a new battery"),
    ("we planted tomatoes and basil in the garden", "fresh basil and tomatoes from the garden"),
    ("I started learning Japanese with flashcards", "Japanese kanji flashcards are hard"),
    ("the Elden Ring boss took me forty tries", "Elden Ring bosses are brutal"),
    ("our flight to Lisbon got cancelled", "Lisbon flights are a mess this week"),
    ("I'm repainting the bathroom sage green", "sage green paint sounds calm"),
    ("the chess club meets on Tuesdays", "I'd join the chess club, I play the Sicilian"),
]


async def chat_subjects(app: App, first_id: int) -> None:
    """One short conversation per subject, each closing by inactivity before the next."""
    message_id = first_id
    for first, second in SUBJECTS:
        for author, text in ((11, first), (12, second)):
            await app.router.ingest(message(message_id, author=author, text=text))
            message_id += 1
            await anyio.sleep(60)
        await anyio.sleep(1800)


async def measured_scale(app: App) -> SimilarityScale:
    """Guild 100's stored scale for the app's embedding model."""
    stored = await app.store.meta.get_meta(
        scale_key(100, app.llm.embedding_model, app.llm.dimension)
    )
    assert stored is not None
    return SimilarityScale.decode(stored)


async def test_nightly_job_measures_each_guilds_similarity_scale(tmp_path: Path) -> None:
    """The nightly job measures the similarity scale of each guild active that day from its
    own vectors, for the embedding model in use, and measures it again the next night with
    that day's notes added."""
    async with running_app(
        settings(tmp_path / "v.db"),
        clock=clock_at(utc("2026-03-02T00:30:00")),
        inline=True,
        llm=OfflineLLM(),
    ) as app:
        await chat_subjects(app, 1)
        await anyio.sleep_until(app.clock.to_monotonic(utc("2026-03-03T00:00:01")))
        assert [r.scales for r in app.scheduler.reports] == [1]
        first = await measured_scale(app)
        assert first.measured_at == utc("2026-03-03T00:00:00")
        assert first.notes == len(SUBJECTS)
        assert -1.0 < first.floor < first.ceiling < 1.0
        await chat_subjects(app, 1001)
        await anyio.sleep_until(app.clock.to_monotonic(utc("2026-03-04T00:00:01")))
        assert [r.scales for r in app.scheduler.reports] == [1, 1]
        again = await measured_scale(app)
        assert again.measured_at == utc("2026-03-04T00:00:00")
        assert again.notes == 2 * len(SUBJECTS)


async def test_a_catch_up_measures_each_guilds_scale_once(tmp_path: Path) -> None:
    """Days caught up one after another measure each guild's similarity scale once, after
    the last of them, from all its notes: a guild active on the first two missed days but
    not on the third is measured, and not again for every day."""
    path = tmp_path / "v.db"
    async with offline_app(path, utc("2026-03-02T09:00:00"), scheduler=False) as app:
        await chat_subjects(app, 1)
        await anyio.sleep_until(app.clock.to_monotonic(utc("2026-03-03T09:00:00")))
        await chat_subjects(app, 1001)
    async with offline_app(path, utc("2026-03-05T09:00:00")) as again:
        reports = again.scheduler.reports
        assert [(r.day, r.guilds, r.scales) for r in reports] == [
            (date(2026, 3, 2), [100], 0),
            (date(2026, 3, 3), [100], 0),
            (date(2026, 3, 4), [], 1),
        ]
        scale = await measured_scale(again)
        assert scale.notes == 2 * len(SUBJECTS)
        assert scale.measured_at == utc("2026-03-05T09:00:00")
