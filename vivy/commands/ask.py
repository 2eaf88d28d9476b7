"""``vivy ask --guild G [--as USER] QUESTION``: what Vivy would answer, from your own database.

The question goes through the bot's own reply path: the :class:`~vivy.retrieval.Retriever`
with the configured retrieval settings builds the memory context from the guild's notes and
the profiles of the asker and of anyone the question mentions (``<@id>``), and the configured
chat model answers the chat request the bot would send (:func:`vivy.bot.reply.build_chat_request`).
Both are printed: the memory context first, so an operator sees what the answer was built
from. The database is only read; nothing is remembered of the question.
"""

from __future__ import annotations

import argparse
import os
import re

import anyio

from vivy.bot.reply import NO_ANSWER, build_chat_request
from vivy.clock import Clock
from vivy.commands.db import add_database_option, database_target, read_only
from vivy.commands.importer import llm_factory
from vivy.commands.members import add_guild_option, guild_of, member_of
from vivy.config import Settings
from vivy.errors import ConfigError
from vivy.llm.port import LLM
from vivy.retrieval import ConversationMessage, MemoryContext, RetrievalRequest, Retriever
from vivy.retrieval.settings import RetrievalSettings
from vivy.storage.engines import Target, open_store
from vivy.text.markup import readable

__all__ = ["ASKER", "VIVY_ID", "answer_question", "ask", "register"]

#: Vivy's own user id in the chat request: no member has it, so every turn is a member's.
VIVY_ID = -1
#: The asker's name when ``--as`` names no member.
ASKER = "operator"

_MENTION = re.compile(r"<@!?(\d+)>")


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vivy ask``."""
    parser = commands.add_parser(
        "ask",
        help="show the memory and the answer Vivy would give to a question",
        description="Ask a question as a member of a guild would mention Vivy with it, and "
        "print the memory context the bot builds for it and the answer the configured chat "
        "model gives. With --as, the asker is that member (an id or a name), so their profile "
        "is in the memory as it would be for them; <@id> in the question mentions a member. "
        "The database is only read.",
    )
    add_guild_option(parser)
    parser.add_argument(
        "--as", dest="asker", metavar="USER", help="ask as this member (an id or a name)"
    )
    parser.add_argument("question", nargs="+", metavar="QUESTION", help="what to ask")
    add_database_option(parser)
    parser.set_defaults(
        handler=lambda args: ask(
            database_target(args), args.guild, " ".join(args.question), asker=args.asker
        )
    )


def ask(database: Target, guild: int | str, question: str, *, asker: str | None = None) -> int:
    """Print the memory context and the answer for ``question``; returns the exit code."""
    if not question.strip():
        raise ConfigError("the question is blank: say what to ask")
    mentioned = tuple(dict.fromkeys(int(m) for m in _MENTION.findall(question)))
    with read_only(database) as view:
        guild_id = guild_of(view, guild)
        asker_id = 0 if asker is None else member_of(view, guild_id, asker)
        names = {user: view.member_name(guild_id, user) or "" for user in {asker_id, *mentioned}}
    asker_name = names.get(asker_id) or (ASKER if asker is None else str(asker_id))
    request = RetrievalRequest(
        guild_id=guild_id,
        channel_id=0,
        query=readable(question, {u: n for u, n in names.items() if n}),
        conversation=(ConversationMessage(asker_id, asker_name, question),),
        mentioned_user_ids=mentioned,
    )
    settings = Settings.from_env(os.environ)
    anyio.run(_ask, database, request, RetrievalSettings.of(settings))
    return 0


async def _ask(database: Target, request: RetrievalRequest, settings: RetrievalSettings) -> None:
    from vivy.app import require_embedding_model

    store = open_store(database, read_only=True)
    llm = llm_factory(os.environ)()
    try:
        await require_embedding_model(store, llm.embedding_model, llm.dimension)
        retriever = Retriever(store.search, llm, Clock.wall(), settings=settings)
        await answer_question(retriever, llm, request)
    finally:
        await llm.aclose()
        store.close()


async def answer_question(
    retriever: Retriever, llm: LLM, request: RetrievalRequest
) -> MemoryContext:
    """Print who asks what, the memory context ``retriever`` builds for ``request`` and the
    answer ``llm`` gives to the chat request the bot would send; returns the context.

    The conversation is ``request.conversation`` (its last message is the question)."""
    asker = request.conversation[-1].author_name if request.conversation else ASKER
    context = await retriever.build_context(request)
    print(f"{asker} asks: {request.query}\n")
    print(f"Memory context ({context.path} retrieval):\n{context.xml or '(empty)'}\n")
    answer = await llm.chat(build_chat_request(request.conversation, VIVY_ID, context.xml))
    print(f"Vivy would answer ({answer.quality}): {answer.text.strip() or NO_ANSWER}")
    return context
