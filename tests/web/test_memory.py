"""The memory page's store-backed source: a correction reaches the replies' retriever."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from prometheus_client import CollectorRegistry

from vivy.clock import Clock
from vivy.commands.demo import DEMO_EXPORT
from vivy.config import Settings
from vivy.importer import import_exports, load_exports
from vivy.llm.offline import OfflineLLM
from vivy.memory.guards import content_tokens
from vivy.memory.page import DayActivity
from vivy.retrieval import RetrievalRequest, Retriever
from vivy.storage.engines import open_store
from vivy.web import views
from vivy.web.memory import StoreMemory

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo export imported into a SQLite file, once for the module."""
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    settings = Settings.from_env({}).with_target(path)
    import_exports([DEMO_EXPORT], settings, llm=OfflineLLM, registry=CollectorRegistry())
    return path


@pytest.fixture
def demo_db(imported: Path, tmp_path: Path) -> Path:
    """A copy of the imported demo of this test's own."""
    path = tmp_path / "demo.db"
    path.write_bytes(imported.read_bytes())
    return path


async def test_a_correction_is_seen_by_the_next_reply_at_once(demo_db: Path) -> None:
    """Two facts of a member removed on the page at the same instant (the memory's
    fingerprint alike after each) are both gone from the very next reply's memory, though
    the reply before each was cached."""
    guild = load_exports([DEMO_EXPORT]).messages[0].guild_id
    store = open_store(demo_db, inline=True)
    llm = OfflineLLM()
    try:
        retriever = Retriever(store.search, llm, Clock.starting_at(2_000_000_000.0))
        memory = StoreMemory(
            store, retriever, now=lambda: 2_000_000_000.0, on_change=retriever.clear_cache
        )
        sam = next(m for m in await memory.members(guild) if m.name == "Sam")
        profile = await memory.profile(guild, sam.user_id)
        assert profile is not None
        facts = [f for f in profile.facts if f.invalidated_at is None][:2]
        assert len(facts) == 2
        request = RetrievalRequest(
            guild_id=guild,
            channel_id=1,
            query="what is Sam up to",
            mentioned_user_ids=(sam.user_id,),
        )
        for fact in facts:
            before = await retriever.build_context(request)
            assert fact.text in before.xml
            hits = retriever.statistics().cache_hits
            assert (await retriever.build_context(request)).xml == before.xml
            assert retriever.statistics().cache_hits == hits + 1
            removed = await memory.remove_fact(guild, sam.user_id, fact.id, "alice")
            assert removed == fact.text
            assert fact.text not in (await retriever.build_context(request)).xml
    finally:
        await llm.aclose()
        store.close()


async def test_quoted_lines_show_mentions_as_names(demo_db: Path) -> None:
    """A kept message that mentions a member is quoted on the page with the member's name,
    in a note's view and under a search hit, never as Discord's ``<@id>``."""
    guild = load_exports([DEMO_EXPORT]).messages[0].guild_id
    store = open_store(demo_db, inline=True)
    llm = OfflineLLM()
    try:
        memory = StoreMemory(
            store, Retriever(store.search, llm, Clock.starting_at(2_000_000_000.0)),
            now=lambda: 2_000_000_000.0,
        )  # fmt: skip
        found = await memory.search(guild, "grab tacos")
        said = [line.text for hit in found.hits for line in hit.lines]
        assert any("@Alex we should finally grab tacos" in text for text in said), said
        note = await memory.note(guild, found.hits[0].note.id)
        assert note is not None and note.lines
        quoted = [line.text for line in note.lines]
        assert any(text.endswith("@Alex we should finally grab tacos") for text in quoted)
        assert not any("<@" in text for text in said + quoted)
    finally:
        await llm.aclose()
        store.close()


async def test_the_guild_list_shows_the_exports_name(demo_db: Path) -> None:
    """The page lists a guild by the name its export gave, beside the id."""
    guild = load_exports([DEMO_EXPORT]).messages[0].guild_id
    store = open_store(demo_db, inline=True)
    llm = OfflineLLM()
    try:
        memory = StoreMemory(
            store, Retriever(store.search, llm, Clock.starting_at(2_000_000_000.0)),
            now=lambda: 2_000_000_000.0,
        )  # fmt: skip
        names = await memory.guild_names()
        assert names == {guild: "Night Owls"}
        html = views.render("guilds.html", guilds=[guild], names=names, who="test")
        assert f'Night Owls <span class="meta">({guild})</span>' in html
        assert f"Server {guild}" not in html
    finally:
        await llm.aclose()
        store.close()


async def test_the_corrections_log_names_and_quotes_until_the_member_is_forgotten(
    demo_db: Path,
) -> None:
    """A removed fact is logged with the member's name and the fact's words; forgetting the
    member later leaves only that a fact was removed."""
    guild = load_exports([DEMO_EXPORT]).messages[0].guild_id
    store = open_store(demo_db, inline=True)
    llm = OfflineLLM()
    try:
        memory = StoreMemory(
            store, Retriever(store.search, llm, Clock.starting_at(2_000_000_000.0)),
            now=lambda: 2_000_000_000.0,
        )  # fmt: skip
        sam = next(m for m in await memory.members(guild) if m.name == "Sam")
        profile = await memory.profile(guild, sam.user_id)
        assert profile is not None
        fact = next(f for f in profile.facts if f.invalidated_at is None)
        assert await memory.remove_fact(guild, sam.user_id, fact.id, "alice") == fact.text
        (entry,) = await memory.corrections(guild)
        assert entry.target == f"fact #{fact.id} ({fact.section}) of Sam ({sam.user_id})"
        assert entry.quote == fact.text
        await memory.forget_member(guild, sam.user_id, "alice")
        removed = (await memory.corrections(guild))[-1]
        assert (removed.target, removed.quote) == ("a fact of a member since forgotten", None)
        for logged in await memory.corrections(guild):
            assert "Sam" not in logged.target and str(sam.user_id) not in logged.target
    finally:
        await llm.aclose()
        store.close()


def test_the_activity_chart_states_each_scale_and_has_a_baseline() -> None:
    """Notes and messages are drawn on scales of their own, so the caption says what full
    height means for each, and the bars stand on a drawn baseline."""
    days = [DayActivity("2026-03-01", 2, 40, 0), DayActivity("2026-03-02", 5, 12, 1)]
    bars = views.chart_bars(days, "2026-03-02", 2)
    assert [(b.notes_height, b.messages_height) for b in bars] == [
        (round(views.CHART_HEIGHT * 2 / 5), views.CHART_HEIGHT),
        (views.CHART_HEIGHT, round(views.CHART_HEIGHT * 12 / 40)),
    ]
    view = SimpleNamespace(
        first="2026-02-24", last="2026-03-02", older="2026-02-23", newer=None, notes=[]
    )
    html = views.render("timeline.html", view=view, bars=bars, guild=1)
    assert "notes (full height 5 a day)" in html
    assert "messages (full height 40 a day)" in html
    assert '<line class="axis"' in html


async def test_search_lists_each_members_active_facts_sharing_a_word(demo_db: Path) -> None:
    """The search's facts are, member by member in the page's order, each active fact of
    their profile that shares a content word with the question, and no removed one."""
    guild = load_exports([DEMO_EXPORT]).messages[0].guild_id
    store = open_store(demo_db, inline=True)
    llm = OfflineLLM()
    try:
        retriever = Retriever(store.search, llm, Clock.starting_at(2_000_000_000.0))
        memory = StoreMemory(store, retriever, now=lambda: 2_000_000_000.0)
        members = await memory.members(guild)
        profiles = [await memory.profile(guild, m.user_id) for m in members]
        facts = [(p.member, f) for p in profiles if p for f in p.facts if f.invalidated_at is None]
        word = content_tokens(facts[0][1].text)
        query = " ".join(sorted(word))
        expected = [
            (member.user_id, fact.id) for member, fact in facts if word & content_tokens(fact.text)
        ]
        found = (await memory.search(guild, query)).facts
        assert len(expected) >= 1
        assert [(m.user_id, m.fact.id) for m in found] == expected
        await memory.remove_fact(guild, facts[0][0].user_id, facts[0][1].id, "alice")
        found = (await memory.search(guild, query)).facts
        assert [(m.user_id, m.fact.id) for m in found] == expected[1:]
    finally:
        await llm.aclose()
        store.close()
