"""``vivy demo``: what Vivy remembers of a bundled three-day conversation, in seconds.

The bundled DiscordChatExporter export (``vivy/data/demo_export.json``) is replayed through
the real pipeline — router, channel actors, NoteWriter, ProfileUpdaters, Scheduler — on SQLite
(or on PostgreSQL: ``--postgres`` starts a throwaway embedded server and deletes it
afterwards; ``--db postgresql://…`` writes into a database you run), with virtual time
(trio's MockClock) standing in for three days, so buffers close by inactivity and by max age
and the nightly job runs for each day. It then prints the notes, each member's profile with
sources, and the memory context Vivy would build for a member's question, with the answer;
then the same for a question in other words than were said (:data:`PARAPHRASED_QUESTION`),
which only the embedding can connect with the message that answers it. ``/metrics`` is
served while it runs. Without a Gemini key the offline provider is used (offline quality);
with ``GEMINI_API_KEY`` or ``MEMORY_GEMINI_TOKEN`` set, Gemini.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode
from urllib.request import Request, urlopen

import anyio
from prometheus_client import CollectorRegistry

from vivy.clock import Clock
from vivy.commands.ask import answer_question
from vivy.commands.importer import format_report, llm_factory
from vivy.commands.inspect import print_notes, print_profile
from vivy.config import Settings, is_postgres_url, shown_database
from vivy.errors import ConfigError
from vivy.importer import ExportMessage, import_exports, load_exports
from vivy.llm.port import LLM
from vivy.retrieval import ConversationMessage, RetrievalRequest, Retriever
from vivy.retrieval.operator import OperatorStore
from vivy.storage.engines import Target, open_store, open_view
from vivy.storage.postgres.embedded import embedded_server
from vivy.text.markup import readable
from vivy.web.memory import StoreMemory
from vivy.web.server import OperatorServer

__all__ = ["DEMO_EXPORT", "register", "run_demo"]

#: The bundled conversation.
DEMO_EXPORT = Path(__file__).resolve().parents[1] / "data" / "demo_export.json"

#: The member's question the demo answers (it is in the bundled export).
QUESTION_MARKER = "remember about Sam's dog"
#: A question in other words than were said (no content word of it is in the message that
#: answers it), asked by the member after the export ends: only meaning can find the answer.
PARAPHRASED_ASKER = "Sam"
PARAPHRASED_QUESTION = "which instrument did Maya learn?"
#: The bundled message that answers it.
PARAPHRASED_ANSWER = "I play the violin! classically trained, very rusty"


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vivy demo``."""
    parser = commands.add_parser(
        "demo",
        help="replay a bundled conversation and show what Vivy remembers (offline by default)",
        description="Replay a bundled three-day conversation of six members through Vivy's "
        "real pipeline on virtual time, then print the notes, each member's profile with the "
        "source of every fact, and the memory Vivy would use to answer a question. Runs on a "
        "temporary SQLite file, or on PostgreSQL (--postgres starts a throwaway embedded "
        "server; --db postgresql://... uses yours). /metrics is served while it runs. Offline "
        "without a Gemini key; with GEMINI_API_KEY set, it uses Gemini.",
    )
    parser.add_argument(
        "--db",
        default=None,
        help="database file, or a postgresql:// URL (default: a temporary SQLite file)",
    )
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="run on a throwaway embedded PostgreSQL server, started and deleted by the demo",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="port of /metrics and the operator API (default: VIVY_METRICS_PORT if set, "
        "else any free port, printed)",
    )
    parser.add_argument(
        "--linger",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="keep serving /metrics this long after the demo (for a scraper to look)",
    )
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    """``vivy demo`` with its command line."""
    if args.postgres and args.db:
        raise ConfigError("--postgres starts a server of its own: leave --db out")
    url = args.db if args.db and is_postgres_url(args.db) else None
    return run_demo(
        None if url else args.db,
        url=url,
        postgres=args.postgres,
        port=args.metrics_port,
        linger=args.linger,
    )


def run_demo(
    db_path: str | None,
    *,
    url: str | None = None,
    postgres: bool = False,
    port: int | None = None,
    linger: float = 0.0,
    environ: Mapping[str, str] | None = None,
) -> int:
    """Run the demo on the SQLite file ``db_path`` (a temporary one when None), on the
    PostgreSQL database at ``url``, or with ``postgres`` on a throwaway embedded server;
    returns the exit code.

    ``/metrics`` and the operator API are served on ``VIVY_METRICS_HOST`` behind
    ``VIVY_API_TOKEN``, as ``vivy run`` serves them, on ``port``, else on
    ``VIVY_METRICS_PORT`` when it is set, else on any free port (so a running bot's default
    port is no obstacle).
    """
    env = os.environ if environ is None else environ
    if port is None:
        port = (
            Settings.from_env(env).metrics_port if env.get("VIVY_METRICS_PORT", "").strip() else 0
        )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(db_path) if db_path else Path(tmp) / "demo.db"
        if postgres:
            with embedded_server(Path(tmp) / "postgres") as server_url:
                return _replay(path, server_url, port, linger, env)
        return _replay(path, url, port, linger, env)


def _replay(path: Path, url: str | None, port: int, linger: float, env: Mapping[str, str]) -> int:
    """The demo on the SQLite file ``path``, or on the PostgreSQL database at ``url``."""
    database: Target = path if url is None else url
    settings = Settings.from_env(env).with_target(database)
    # The memory page always needs a token: the operator's, or one made for this run.
    token = settings.api_token or secrets.token_urlsafe(18)
    registry = CollectorRegistry()
    server = OperatorServer(
        registry,
        host=settings.metrics_host,
        port=port,
        bearer_token=token,
        page_tokens=settings.page_tokens,
    )
    # The port is bound first, so a port in use stops the demo before it creates a database.
    server.bind()
    try:
        shown = _Shown(server, settings, token, registry, llm_factory(env), linger)
        return anyio.run(_serve_and_show, shown)
    finally:
        server.stop()


@dataclass(frozen=True, slots=True)
class _Shown:
    """What the demo serves and shows: its server (bound), settings, page token, metrics,
    model and how long to keep serving after the replay."""

    server: OperatorServer
    settings: Settings
    token: str
    registry: CollectorRegistry
    make_model: Callable[[], LLM]
    linger: float


async def _serve_and_show(shown: _Shown) -> int:
    """Serve ``/metrics``, the operator API and the memory page on this event loop while the
    replay runs and its memory is shown."""
    server, database = shown.server, shown.settings.target
    open_store(database, inline=True).close()  # created now, so the page can serve it
    store = open_store(database)
    llm = shown.make_model()
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(server.serve)
            clock = Clock.wall()
            retriever = Retriever(store.search, llm, clock)  # the API and the page search alike
            server.serve_api(OperatorStore(store.search, retriever))
            server.serve_page(StoreMemory(store, retriever, now=clock.now))
            code = await _show(shown)
            tg.cancel_scope.cancel()
        return code
    finally:
        try:
            await llm.aclose()
        finally:
            store.close()


async def _show(shown: _Shown) -> int:
    """The replay and what it remembered, printed, with the page served meanwhile. The
    replay runs on virtual time on a thread of its own, so the server's loop keeps real
    time."""
    server, settings, make_model = shown.server, shown.settings, shown.make_model
    database = settings.target
    batch = load_exports([DEMO_EXPORT])
    print(f"Vivy demo: metrics at {server.url}/metrics, the memory page at {server.url}/")
    if settings.api_token is None:
        print(f"Token for the memory page (this run only): {shown.token}")
    provider = settings.llm_provider
    quality = {
        "offline": "offline provider (offline quality)",
        "gemini": "Gemini models",
        "openai": "OpenAI-compatible endpoint's models",
    }[provider]
    print(
        f"Replaying {DEMO_EXPORT.name}: {batch.total} messages over "
        f"{len({m.timestamp // 86400 for m in batch.messages})} days, "
        f"on virtual time, with the {quality}.\n"
    )
    report = await anyio.to_thread.run_sync(
        lambda: import_exports([DEMO_EXPORT], settings, llm=make_model, registry=shown.registry)
    )
    print(format_report(report, shown_database(settings)))
    guild = batch.messages[0].guild_id
    await anyio.to_thread.run_sync(_print_memory, database, guild)
    _section("Memory for a question")
    await _answer(database, batch.messages, make_model)
    _section("Memory for a question in other words")
    await _answer_paraphrased(database, batch.messages, make_model)
    query = urlencode({"guild_id": guild, "q": "game night"})
    search_url = f"{server.url}/api/memory/search?{query}"
    hits = await anyio.to_thread.run_sync(_search_hits, search_url, shown.token)
    print(f"\nOperator search API ({search_url}): {len(hits)} hits")
    if shown.linger > 0:
        print(
            f"\nServing {server.url}/metrics and the memory page at {server.url}/ "
            f"for {shown.linger:g} more seconds."
        )
        await anyio.sleep(shown.linger)
    else:
        print(
            "\nThe memory page closes with the demo: run vivy demo --linger 600 to keep it "
            "open for ten minutes after the replay."
        )
    return 0


def _section(title: str) -> None:
    print(f"\n{'=' * 8} {title} {'=' * (60 - len(title))}\n")


def _print_memory(database: Target, guild: int) -> None:
    """Print the guild's notes and each member's profile."""
    with open_view(database) as reader:
        _section("Notes")
        print_notes(reader, guild, limit=100)
        _section("Profiles")
        for user_id, _ in reader.guild_members(guild):
            print_profile(reader, guild, user_id, include_invalidated=False)
            print()


def _search_hits(url: str, token: str) -> list[object]:
    """The results the operator search API answers ``url`` with."""
    with urlopen(Request(url, headers={"Authorization": f"Bearer {token}"}), timeout=10) as answer:
        hits: list[object] = json.load(answer)["results"]
    return hits


async def _answer(
    database: Target,
    messages: Sequence[ExportMessage],
    make_model: Callable[[], LLM],
) -> None:
    """Build the memory context for the member's question in the export, and answer it."""
    question = next(m for m in messages if QUESTION_MARKER in m.content)
    earlier = [m for m in messages if m.channel_id == question.channel_id][-8:]
    conversation = tuple(
        ConversationMessage(m.author_id, m.author_name, m.content)
        for m in earlier
        if m.timestamp < question.timestamp and not m.author_is_bot
    )[-5:]
    asked = ConversationMessage(question.author_id, question.author_name, question.content)
    names = {m.author_id: m.author_name for m in messages}
    await _ask(
        database,
        make_model,
        RetrievalRequest(
            guild_id=question.guild_id,
            channel_id=question.channel_id,
            query=readable(question.content, names),
            conversation=(*conversation, asked),
            mentioned_user_ids=tuple(question.mentions),
        ),
        question.timestamp + 3 * 86400,
    )


async def _answer_paraphrased(
    database: Target,
    messages: Sequence[ExportMessage],
    make_model: Callable[[], LLM],
) -> None:
    """Ask :data:`PARAPHRASED_QUESTION` after the export ends, in the channel of the message
    that answers it, and show where that message is in the memory context."""
    answer = next(m for m in messages if PARAPHRASED_ANSWER in m.content)
    asker = next(m for m in messages if m.author_name == PARAPHRASED_ASKER)
    request = RetrievalRequest(
        guild_id=answer.guild_id,
        channel_id=answer.channel_id,
        query=PARAPHRASED_QUESTION,
        conversation=(
            ConversationMessage(asker.author_id, asker.author_name, PARAPHRASED_QUESTION),
        ),
    )
    xml = await _ask(database, make_model, request, messages[-1].timestamp + 86400)
    quoted = [line for line in xml.splitlines() if PARAPHRASED_ANSWER in line]
    shown = quoted[0].strip() if quoted else "(not quoted)"
    print(f"\nThe message that answers it, quoted in the memory: {shown}")


async def _ask(
    database: Target,
    make_model: Callable[[], LLM],
    request: RetrievalRequest,
    at: float,
) -> str:
    """Print the memory context for ``request`` asked at ``at`` and the answer, as ``vivy
    ask`` does; return the context."""
    llm = make_model()
    store = open_store(database, read_only=True)
    try:
        retriever = Retriever(store.search, llm, Clock.starting_at(at))
        return (await answer_question(retriever, llm, request)).xml
    finally:
        await llm.aclose()
        store.close()
