"""Answering a member: the hikari adapter's half that speaks.

A human message that mentions Vivy or replies to one of its messages is answered: typing shows
while the reply chain is fetched, memory is retrieved and the chat model answers; the answer
is sent as a reply, split into Discord-sized chunks, with no pings. Memory failing never stops
an answer; the chat model failing gives an apology. Each member is rate-limited. The
decisions (who is addressed, the rate limit, the chat turns, the chunks) are
:mod:`vivy.bot.reply`'s; this module does the I/O.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Protocol

import anyio
import hikari
import structlog

from vivy.bot.messages import author_name, reference_id
from vivy.bot.reply import (
    APOLOGY,
    MAX_CHAIN,
    NO_ANSWER,
    RateDecision,
    ReplyRateLimiter,
    build_chat_request,
    is_addressed,
    rate_limited_text,
    render_mentions,
    split_message,
)
from vivy.clock import Clock
from vivy.config import Settings
from vivy.llm.port import LLM
from vivy.metrics import ReplyOutcome, RetrievalPath
from vivy.retrieval import ConversationMessage, RetrievalRequest, Retriever
from vivy.state.gate import IncomingMessage

__all__ = ["TYPING_REFRESH_S", "AnswerObserver", "Answerer"]

log = structlog.get_logger(__name__)

#: Discord shows typing for 10 s; it is triggered again a little before that.
TYPING_REFRESH_S = 8.0


class AnswerObserver(Protocol):
    """What answering tells the metrics."""

    def replied(self, outcome: ReplyOutcome) -> None:
        """An answer ended with ``outcome``."""

    def retrieved(self, path: RetrievalPath, seconds: float) -> None:
        """Memory was retrieved by ``path`` in ``seconds``."""


class Answerer:
    """Answers the messages addressed to Vivy, through ``rest``: ``chat`` answers with the
    memory ``retriever`` builds (unless retrieval is off in ``settings``); ``limiter``
    rate-limits each member; how each answer ended is told to ``observer``."""

    def __init__(
        self,
        rest: hikari.api.RESTClient,
        *,
        own_user_id: int,
        retriever: Retriever,
        chat: LLM,
        clock: Clock,
        settings: Settings,
        observer: AnswerObserver,
        limiter: ReplyRateLimiter | None = None,
    ) -> None:
        self._rest = rest
        self._own = own_user_id
        self._retriever = retriever
        self._chat = chat
        self._clock = clock
        self._settings = settings
        self._observer = observer
        self._limiter = limiter or ReplyRateLimiter()
        self._own_mention = re.compile(rf"<@!?{own_user_id}>")

    def addressed(self, message: hikari.Message, incoming: IncomingMessage) -> bool:
        """Whether ``message`` (captured as ``incoming``) mentions Vivy or replies to it, from a
        human other than Vivy."""
        if incoming.author_is_bot or incoming.author_id == self._own:
            return False
        replied_to: int | None = None
        referenced = message.referenced_message
        if isinstance(referenced, hikari.PartialMessage) and isinstance(
            referenced.author, hikari.User
        ):
            replied_to = int(referenced.author.id)
        return is_addressed(
            self._own,
            author_is_bot=incoming.author_is_bot,
            mentions=incoming.mentions,
            replied_to_author=replied_to,
        )

    async def answer(self, message: hikari.Message) -> ReplyOutcome:
        """Answer a message addressed to Vivy, as a reply; returns how it ended."""
        author = int(message.author.id)
        now = self._clock.now()
        decision = self._limiter.check(author, now)
        if decision is not RateDecision.ALLOW:
            if decision is RateDecision.DENY_NOTIFY:
                wait = self._limiter.retry_after(author, now)
                await self._send(message, rate_limited_text(wait))
            return self._count(ReplyOutcome.RATE_LIMITED)
        bound = log.bind(
            guild_id=message.guild_id, channel_id=message.channel_id, message_id=message.id
        )
        outcome = ReplyOutcome.ANSWERED
        async with self._typing(int(message.channel_id)):
            conversation, mentioned = await self._conversation(message)
            memory = await self._memory(message, conversation, mentioned, bound)
            request = build_chat_request(conversation, self._own, memory)
            try:
                answer = await self._chat.chat(request)
                text = answer.text.strip() or NO_ANSWER
            except Exception:
                bound.exception("chat model failed; apologising")
                text, outcome = APOLOGY, ReplyOutcome.FAILED
        if not await self._send(message, text):
            outcome = ReplyOutcome.FAILED
        return self._count(outcome)

    def _count(self, outcome: ReplyOutcome) -> ReplyOutcome:
        self._observer.replied(outcome)
        return outcome

    @asynccontextmanager
    async def _typing(self, channel_id: int) -> AsyncIterator[None]:
        """Show "Vivy is typing…" in the channel until the block ends."""
        async with anyio.create_task_group() as tg:
            await tg.start(self._keep_typing, channel_id)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()

    async def _keep_typing(
        self, channel_id: int, *, task_status: anyio.abc.TaskStatus[None]
    ) -> None:
        """Trigger typing now (reported started once sent) and again before it lapses."""
        started = False
        try:
            while True:
                await self._rest.trigger_typing(channel_id)
                if not started:
                    started = True
                    task_status.started()
                await anyio.sleep(TYPING_REFRESH_S)
        except hikari.HikariError as exc:  # no permission, or Discord is struggling
            log.debug("typing indicator unavailable", channel_id=channel_id, error=str(exc))
            if not started:
                task_status.started()

    async def _send(self, message: hikari.Message, text: str) -> bool:
        """Send ``text`` as a reply to ``message`` in chunks, pinging no one."""
        try:
            for index, chunk in enumerate(split_message(text)):
                await self._rest.create_message(
                    message.channel_id,
                    chunk,
                    reply=message.id if index == 0 else hikari.UNDEFINED,
                    reply_must_exist=False,
                    mentions_everyone=False,
                    user_mentions=False,
                    role_mentions=False,
                    mentions_reply=False,
                )
        except hikari.HikariError:
            log.exception("answer not delivered", channel_id=message.channel_id)
            return False
        return True

    async def _conversation(
        self, message: hikari.Message
    ) -> tuple[list[ConversationMessage], tuple[int, ...]]:
        """The reply chain (oldest first, at most :data:`MAX_CHAIN` earlier messages) and
        the users mentioned in the message, except Vivy."""
        chain: list[hikari.PartialMessage] = [message]
        seen = {int(message.id)}
        embedded: hikari.PartialMessage | hikari.UndefinedType | None = message.referenced_message
        next_id = reference_id(message)
        while next_id is not None and next_id not in seen and len(chain) <= MAX_CHAIN:
            if isinstance(embedded, hikari.PartialMessage) and int(embedded.id) == next_id:
                found: hikari.PartialMessage = embedded
            else:
                try:
                    found = await self._rest.fetch_message(message.channel_id, next_id)
                except hikari.HikariError:
                    break
            chain.append(found)
            seen.add(next_id)
            embedded = found.referenced_message
            next_id = reference_id(found)
        names = {self._own: "Vivy"}
        for item in chain:
            for user_id, user in (item.user_mentions or {}).items():
                names.setdefault(int(user_id), user.global_name or user.username)
        conversation = [
            ConversationMessage(
                author_id=int(item.author.id) if isinstance(item.author, hikari.User) else 0,
                author_name="Vivy"
                if isinstance(item.author, hikari.User) and int(item.author.id) == self._own
                else author_name(item),
                text=render_mentions(item.content or "", names),
            )
            for item in reversed(chain)
        ]
        mentioned = tuple(
            dict.fromkeys(int(u) for u in message.user_mentions_ids or () if int(u) != self._own)
        )
        return conversation, mentioned

    async def _memory(
        self,
        message: hikari.Message,
        conversation: list[ConversationMessage],
        mentioned: tuple[int, ...],
        bound: structlog.typing.FilteringBoundLogger,
    ) -> str:
        """The ``<background_facts>`` block, or "" when retrieval is off or failed."""
        if not self._settings.retrieval_enabled:
            self._observer.retrieved(RetrievalPath.DISABLED, 0.0)
            return ""
        assert message.guild_id is not None
        query = " ".join(self._own_mention.sub(" ", message.content or "").split())
        request = RetrievalRequest(
            guild_id=int(message.guild_id),
            channel_id=int(message.channel_id),
            query=render_mentions(query, {}),
            conversation=tuple(conversation),
            mentioned_user_ids=mentioned,
        )
        try:
            context = await self._retriever.build_context(request)
        except Exception:
            bound.exception("memory retrieval failed; answering without memory")
            return ""
        bound.debug(
            "memory retrieved",
            path=context.path,
            notes=len(context.note_ids),
            users=len(context.user_ids),
        )
        return context.xml
