"""The bot's gateway made from the running app: the parts it uses, and nothing else of it."""

from __future__ import annotations

import hikari

from vivy.app import App
from vivy.bot.answering import Answerer
from vivy.bot.commands import MemoryCommands
from vivy.bot.gateway import MAX_UNSTORED, Gateway
from vivy.bot.reply import ReplyRateLimiter
from vivy.retrieval import Retriever
from vivy.retrieval.settings import RetrievalSettings

__all__ = ["gateway_for", "reply_retriever"]


def reply_retriever(app: App) -> Retriever:
    """The retriever that builds replies' memory, over the app's store and LLM, reporting to
    its metrics."""
    return Retriever(
        app.store.search,
        app.llm,
        app.clock,
        observe=app.observer.retrieved,
        settings=RetrievalSettings.of(app.settings),
    )


def gateway_for(
    app: App,
    rest: hikari.api.RESTClient,
    *,
    own_user_id: int,
    cache: hikari.api.Cache | None = None,
    limiter: ReplyRateLimiter | None = None,
    retriever: Retriever | None = None,
    max_unstored: int = MAX_UNSTORED,
) -> Gateway:
    """The gateway of the running ``app``: its router, an answerer of its LLM with the memory
    ``retriever`` builds (else a :func:`reply_retriever` of its own) and a ``limiter`` per
    member, its ``/memory`` commands (which clear the
    retriever's cache when a member is forgotten), its stored channel positions and its
    metrics; past ``max_unstored`` events waiting for the database, new messages are left
    to a catch-up from history."""
    retriever = retriever or reply_retriever(app)
    return Gateway(
        rest,
        own_user_id=own_user_id,
        router=app.router,
        answerer=Answerer(
            rest,
            own_user_id=own_user_id,
            retriever=retriever,
            chat=app.llm,
            clock=app.clock,
            settings=app.settings,
            observer=app.observer,
            limiter=limiter,
        ),
        clock=app.clock,
        settings=app.settings,
        positions=app.store.imports,
        buffers=app.store.buffers,
        members=app.store.members,
        commands=MemoryCommands(app, forgotten=retriever.clear_cache),
        observer=app.observer,
        cache=cache,
        max_unstored=max_unstored,
    )
