"""``vivy search --guild G QUERY``: the retriever's ranking of a guild's notes for a query.

It embeds the query with the configured embedding model (the offline one without a key),
refuses notes another model embedded (``vivy reembed`` moves them), searches the guild's
notes and their evidence as replies do, and prints the hits with their scores and, under
each, the kept messages that matched (author, date, text). Read-only.
"""

from __future__ import annotations

import argparse
import os
import sys

import anyio

from vivy.clock import Clock
from vivy.commands.db import add_database_option, database_target, read_only
from vivy.commands.importer import llm_factory
from vivy.commands.members import add_guild_option, guild_label, guild_of
from vivy.config import Settings
from vivy.errors import ConfigError
from vivy.memory.dates import note_date, short_date
from vivy.retrieval import NoteHit, Retriever
from vivy.retrieval.context import clip, quoted_text
from vivy.retrieval.settings import RetrievalSettings
from vivy.storage.engines import Target, open_store

__all__ = ["register", "search"]


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 50:
        raise argparse.ArgumentTypeError(f"expected a number from 1 to 50, got {text!r}")
    return value


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vivy search``."""
    parser = commands.add_parser(
        "search",
        help="search a guild's notes",
        description="Search a guild's notes for a question as replies do, and print the hits "
        "with their scores and, under each, the messages that matched. The question is embedded "
        "with the configured embedding model (the offline one without a key). The database is "
        "only read.",
    )
    add_guild_option(parser)
    parser.add_argument("--limit", type=_limit, default=10, help="hits to show (1-50)")
    parser.add_argument("query", nargs="+", help="what to look for")
    add_database_option(parser)
    parser.set_defaults(
        handler=lambda args: search(
            database_target(args), args.guild, " ".join(args.query), args.limit
        )
    )


def search(database: Target, guild: int | str, query: str, limit: int) -> int:
    """Print the fused ranking; returns the exit code."""
    if not query.strip():
        raise ConfigError("the query is blank: say what to look for")
    with read_only(database) as view:
        guild_id = guild_of(view, guild)
        label = guild_label(view, guild_id)
    hits = anyio.run(_search, database, guild_id, query, limit)
    if not hits:
        print(f"no notes in {label} match {query!r}", file=sys.stderr)
        return 0
    for rank, hit in enumerate(hits, start=1):
        note = hit.note
        where = f"#{note.channel_name}" if note.channel_name else "all channels"
        print(f"{rank:2}. {hit.score:.3f}  [{short_date(note.note_date)}] {note.title}  ({where})")
        print(f"    {note.summary[:200]}")
        for line in hit.said:
            said = short_date(note_date(line.created_at))
            print(f"      > {line.author_name}, {said}: {clip(quoted_text(line, note), 160)}")
    return 0


async def _search(database: Target, guild_id: int, query: str, limit: int) -> list[NoteHit]:
    from vivy.app import require_embedding_model

    store = open_store(database, read_only=True)
    llm = llm_factory(os.environ)()
    try:
        await require_embedding_model(store, llm.embedding_model, llm.dimension)
        settings = RetrievalSettings.of(Settings.from_env(os.environ))
        retriever = Retriever(store.search, llm, Clock.wall(), settings=settings)
        return await retriever.search_notes(guild_id, query, limit)
    finally:
        await llm.aclose()
        store.close()
