"""The whole pipeline once per provider: import the demo export, search it, answer a mention.

Gemini and the OpenAI-compatible provider run against their fake servers, which answer from
one fake brain (:mod:`vivy_lab.fakes.brain`), so both must store the same notes and facts and
rank the same search results: what differs is only each provider's own plumbing (requests,
structured output, normalisation). The OpenAI-compatible import runs its client on a private
asyncio loop (as ``vivy import`` does) and on a trio one.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
import hikari
import pytest
from hikari.impl import GatewayShardImpl, RESTClientImpl
from prometheus_client import CollectorRegistry

from vivy.app import running_app
from vivy.bot.gateway import INTENTS
from vivy.bot.wiring import gateway_for
from vivy.clock import Clock
from vivy.commands.demo import DEMO_EXPORT
from vivy.commands.importer import llm_factory, run_import
from vivy.commands.search import search
from vivy.config import Settings
from vivy.importer import import_exports
from vivy_lab.fakes.brain import gemini_brain_route
from vivy_lab.fakes.gemini import FakeGemini
from vivy_lab.fakes.openai import FakeOpenAI, answer, error

from . import payloads
from .conftest import TOKEN, VIVY, VIVY_USER, quiet_bot
from .fake_discord import FakeDiscord

_EXPORT = json.loads(DEMO_EXPORT.read_text())[0]
GUILD = int(_EXPORT["guild"]["id"])
CHANNEL = int(_EXPORT["channel"]["id"])
QUERIES = ("game night", "where does everyone live", "learning Rust")
ASKER = payloads.user(4_000_000_000_000_000_077, "quinn_q", global_name="Quinn")

#: Variables of every provider, cleared before one provider's are set.
_PROVIDER_VARIABLES = (
    "GEMINI_API_KEY",
    "MEMORY_GEMINI_TOKEN",
    "GOOGLE_GEMINI_BASE_URL",
    "VIVY_LLM_PROVIDER",
    "VIVY_EMBEDDING_PROVIDER",
    "VIVY_OPENAI_BASE_URL",
)


@contextmanager
def provider(name: str, **fake_options: Any) -> Iterator[tuple[dict[str, str], Any]]:
    """The environment of provider ``name`` and its fake server (None offline)."""
    if name == "offline":
        yield {}, None
    elif name == "gemini":
        with FakeGemini(route=gemini_brain_route()) as gemini:
            yield {"GEMINI_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": gemini.base_url}, gemini
    else:
        with FakeOpenAI(**fake_options) as fake:
            yield {"VIVY_LLM_PROVIDER": "openai", "VIVY_OPENAI_BASE_URL": fake.base_url}, fake


def memory(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """The notes and facts stored in ``db``, sorted (concurrent calls finish in any order;
    a note or fact written twice shows twice)."""
    with sqlite3.connect(db) as conn:
        notes = conn.execute(
            "SELECT note_type, title, summary, topics, decisions, open_questions, entities,"
            " participants FROM interaction_notes ORDER BY id"
        ).fetchall()
        facts = conn.execute(
            "SELECT user_id, section, text, source_label, invalidated_at IS NULL"
            " FROM profile_facts ORDER BY id"
        ).fetchall()
    return {"notes": sorted(notes), "facts": sorted(facts)}


def searched(
    db: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> list[str]:
    """What ``vivy search`` prints for each query, with ``env`` as the environment."""
    for name in _PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    printed = []
    for query in QUERIES:
        assert search(db, GUILD, query, 5) == 0
        printed.append(capsys.readouterr().out)
    return printed


@pytest.fixture(scope="module")
def gemini_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The demo export imported through the Gemini fake (the run the others are compared to)."""
    db = tmp_path_factory.mktemp("gemini") / "vivy.db"
    with provider("gemini") as (env, _):
        assert run_import([str(DEMO_EXPORT)], database=db, environ=env) == 0
    return db, env


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_openai_import_matches_the_gemini_import(
    backend: str,
    tmp_path: Path,
    gemini_run: tuple[Path, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The same notes, facts and search results through the OpenAI-compatible provider, its
    client on an asyncio or a trio loop."""
    gemini_db, _ = gemini_run
    db = tmp_path / "vivy.db"
    with provider("openai") as (env, fake):
        if backend == "asyncio":
            assert run_import([str(DEMO_EXPORT)], database=db, environ=env) == 0
        else:
            settings = Settings.from_env(env)
            report = import_exports(
                [DEMO_EXPORT], settings, llm=llm_factory(env, backend="trio"), database=db
            )
            assert report.complete and report.llm == "openai"
        ours = memory(db)
        assert ours == memory(gemini_db)
        assert len(ours["notes"]) > 10 and len(ours["facts"]) > 5
        assert {r.response_format for r in fake.calls("chat")} == {"json_schema"}
        with provider("gemini") as (fresh_gemini_env, _):
            expected = searched(gemini_db, fresh_gemini_env, monkeypatch, capsys)
        found = searched(db, env, monkeypatch, capsys)
    assert found == expected
    assert all(out.startswith(" 1. ") for out in found)


def test_a_troubled_endpoint_loses_and_duplicates_no_note(
    tmp_path: Path, gemini_run: tuple[Path, dict[str, str]]
) -> None:
    """A JSON-mode-only server that wraps answers in prose, drops usage and fails now and
    then (429 with Retry-After, 500, off-schema answers) ends with the healthy run's notes
    and facts, each once."""
    gemini_db, _ = gemini_run
    db = tmp_path / "vivy.db"
    with provider("openai", formats=frozenset({"json_object"}), prose=True, usage=False) as (
        env,
        fake,
    ):
        fake.script_chat(
            error(429, retry_after="0"),
            error(500),
            answer({"unexpected": True}),
            answer({"unexpected": True}),
        )
        assert run_import([str(DEMO_EXPORT)], database=db, environ=env) == 0
        formats = [r.response_format for r in fake.calls("chat")]
    assert memory(db) == memory(gemini_db)
    # The refusal is learned once: past the calls already in flight (at most the import's
    # concurrency of 4), every request is in JSON mode.
    first = formats.index("json_object")
    assert "json_schema" not in formats[first + 4 :] and len(formats) > first + 20


@pytest.mark.parametrize("name", ["offline", "gemini", "openai"])
@pytest.mark.anyio
async def test_a_mention_is_answered_from_the_imported_memory(name: str, tmp_path: Path) -> None:
    """After the import, a mention of the bot is answered by the provider, with the memory
    the retriever found in the system prompt."""
    db = tmp_path / "vivy.db"
    with provider(name) as (env, fake):
        assert await _import(env, db) == 0
        settings = Settings.from_env({**env, "VIVY_DB": str(db)})
        async with FakeDiscord(VIVY_USER, guild_id=GUILD) as discord:
            bot = quiet_bot(discord)
            rest = bot.rest
            assert isinstance(rest, RESTClientImpl)
            rest.start()
            try:
                async with running_app(
                    settings,
                    clock=Clock.starting_at(time.time()),
                    registry=CollectorRegistry(),
                    own_user_id=VIVY,
                    scheduler=False,
                ) as app:
                    gateway = gateway_for(app, bot.rest, own_user_id=VIVY)
                    gateway.subscribe(bot.event_manager)
                    await _mention(bot, "what happened at game night?")
                    gateway.unsubscribe(bot.event_manager)
            finally:
                await bot.rest.close()
        [sent] = discord.sent(CHANNEL)
        if fake is None:
            assert sent["content"].startswith("(offline mode)")
            return
        if isinstance(fake, FakeOpenAI):
            asked = fake.calls("chat")[-1].system
        else:
            last = fake.requests[-1].body["systemInstruction"]
            asked = "".join(part["text"] for part in last["parts"])
    assert "<background_facts>" in asked and "<notes>" in asked
    assert sent["content"].startswith("I remember this: [")


async def _import(env: dict[str, str], db: Path) -> int:
    """``vivy import`` of the demo export, run in a worker thread (it runs its own loop)."""
    return await anyio.to_thread.run_sync(
        lambda: run_import([str(DEMO_EXPORT)], database=db, environ=env)
    )


async def _mention(bot: hikari.GatewayBot, text: str) -> None:
    """Deliver a message from the asker that mentions the bot, and wait for its handling."""
    message_id = payloads.next_snowflake()
    payload = payloads.message(
        message_id,
        ASKER,
        f"<@{VIVY}> {text}",
        channel_id=CHANNEL,
        guild_id=GUILD,
        mentions=(VIVY_USER,),
    )
    shard = GatewayShardImpl(
        event_factory=bot.event_factory,
        event_manager=bot.event_manager,
        http_settings=bot.http_settings,
        proxy_settings=bot.proxy_settings,
        intents=INTENTS,
        token=TOKEN,
        url="wss://127.0.0.1:1",
    )
    event = bot.event_factory.deserialize_message_create_event(shard, payload)
    await bot.event_manager.dispatch(event, return_tasks=True)
