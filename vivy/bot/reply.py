"""The pure half of answering a member: when to answer, what to ask, how to send it.

Nothing here does I/O or reads a clock: the gateway adapter passes the time in. It decides
whether a message addresses Vivy, rate-limits each member with a token bucket, turns a reply
chain into chat turns with readable mentions, and splits an answer into Discord-sized chunks on
paragraph, line or word boundaries (a code fence cut in two is closed and reopened).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from vivy.llm.port import ChatRequest, ChatTurn
from vivy.llm.prompts import chat_request
from vivy.retrieval import ConversationMessage

__all__ = [
    "APOLOGY",
    "MAX_CHAIN",
    "MAX_MESSAGE_CHARS",
    "NO_ANSWER",
    "RateDecision",
    "RateLimit",
    "ReplyRateLimiter",
    "build_chat_request",
    "chat_turns",
    "is_addressed",
    "rate_limited_text",
    "render_mentions",
    "split_message",
]

#: Longest message Discord accepts from a bot.
MAX_MESSAGE_CHARS = 2000

#: Most earlier messages of a reply chain taken into the conversation.
MAX_CHAIN = 10

#: Sent when the chat model failed.
APOLOGY = "Sorry, I can't answer right now — my thoughts are stuck. Please try again in a bit."

#: Sent when the chat model answered with nothing.
NO_ANSWER = "I'm not sure what to say to that."

_FENCE = "```"
#: Smallest chunk size :func:`split_message` accepts (room for a reopened fence and text).
_MIN_LIMIT = 32
#: A cut never comes before this offset, so every chunk carries text past a reopened fence.
_MIN_CUT = 2 * len(_FENCE) + 2
_MENTION = re.compile(r"<@!?(\d+)>")


@dataclass(frozen=True, slots=True)
class RateLimit:
    """A token bucket: ``capacity`` replies, refilled evenly over ``per_s`` seconds."""

    capacity: int = 5
    per_s: float = 60.0

    @property
    def refill_per_s(self) -> float:
        """Tokens regained per second."""
        return self.capacity / self.per_s


class RateDecision(Enum):
    """What to do with one message addressed to Vivy."""

    #: Answer it.
    ALLOW = "allow"
    #: Do not answer; say once that the member is going too fast.
    DENY_NOTIFY = "deny_notify"
    #: Do not answer and say nothing (the member was already told).
    DENY_SILENT = "deny_silent"


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated_at: float
    notified: bool = False


class ReplyRateLimiter:
    """Per-member token buckets; time is passed in, so the limiter is pure and exact."""

    def __init__(self, limit: RateLimit | None = None, *, max_members: int = 10_000) -> None:
        self.limit = limit or RateLimit()
        self._max_members = max_members
        self._buckets: dict[int, _Bucket] = {}

    def check(self, member_id: int, now: float) -> RateDecision:
        """Take a token for ``member_id`` at ``now`` if there is one."""
        bucket = self._refilled(member_id, now)
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            bucket.notified = False
            return RateDecision.ALLOW
        if bucket.notified:
            return RateDecision.DENY_SILENT
        bucket.notified = True
        return RateDecision.DENY_NOTIFY

    def retry_after(self, member_id: int, now: float) -> float:
        """Seconds until ``member_id`` has a token again (0 when they have one)."""
        bucket = self._buckets.get(member_id)
        if bucket is None:
            return 0.0
        tokens = min(
            float(self.limit.capacity),
            bucket.tokens + (now - bucket.updated_at) * self.limit.refill_per_s,
        )
        return max(0.0, (1.0 - tokens) / self.limit.refill_per_s)

    def _refilled(self, member_id: int, now: float) -> _Bucket:
        bucket = self._buckets.get(member_id)
        if bucket is None:
            if len(self._buckets) >= self._max_members:
                self._prune(now)
            bucket = self._buckets[member_id] = _Bucket(float(self.limit.capacity), now)
            return bucket
        elapsed = max(0.0, now - bucket.updated_at)
        bucket.tokens = min(
            float(self.limit.capacity), bucket.tokens + elapsed * self.limit.refill_per_s
        )
        bucket.updated_at = max(bucket.updated_at, now)
        return bucket

    def _prune(self, now: float) -> None:
        """Forget members whose bucket is full again (they are as good as new)."""
        full = [
            member
            for member, b in self._buckets.items()
            if b.tokens + (now - b.updated_at) * self.limit.refill_per_s >= self.limit.capacity
        ]
        for member in full:
            del self._buckets[member]


def rate_limited_text(wait_s: float) -> str:
    """The polite answer to a member who is talking to Vivy too fast."""
    seconds = max(1, round(wait_s))
    unit = "second" if seconds == 1 else "seconds"
    return (
        "You're talking to me faster than I can think! Give me about "
        f"{seconds} {unit} and ask again."
    )


def is_addressed(
    own_user_id: int,
    *,
    author_is_bot: bool,
    mentions: Iterable[int],
    replied_to_author: int | None,
) -> bool:
    """Whether a message asks Vivy for an answer: a human mentions it or replies to it."""
    if author_is_bot:
        return False
    return own_user_id in set(mentions) or replied_to_author == own_user_id


def render_mentions(text: str, names: Mapping[int, str]) -> str:
    """``text`` with ``<@id>`` mentions of known users shown as ``@name``."""

    def name(match: re.Match[str]) -> str:
        known = names.get(int(match.group(1)))
        return f"@{known}" if known else match.group(0)

    return _MENTION.sub(name, text)


def chat_turns(
    conversation: Sequence[ConversationMessage], own_user_id: int
) -> tuple[ChatTurn, ...]:
    """The conversation as chat turns: Vivy's messages are the model's, the rest the users'."""
    return tuple(
        ChatTurn(
            role="model" if line.author_id == own_user_id else "user",
            author=line.author_name,
            text=line.text,
        )
        for line in conversation
        if line.text.strip()
    )


def build_chat_request(
    conversation: Sequence[ConversationMessage], own_user_id: int, memory_context: str = ""
) -> ChatRequest:
    """The chat request for an answer: persona, the conversation, and the memory block."""
    return chat_request(chat_turns(conversation, own_user_id), memory_context)


def split_message(text: str, limit: int = MAX_MESSAGE_CHARS) -> list[str]:
    """``text`` in chunks of at most ``limit`` characters, cut where a reader would cut.

    A chunk ends at the last paragraph break, else line break, else space that keeps it at
    least half full; a single word longer than a chunk is cut hard. A code fence left open at
    the end of a chunk is closed there and reopened at the start of the next one.
    """
    if limit < _MIN_LIMIT:
        raise ValueError(f"limit must be at least {_MIN_LIMIT}, got {limit}")
    rest = text.strip()
    chunks: list[str] = []
    room = limit - len(_FENCE) - 1  # space to close a fence
    while rest:
        if len(rest) <= limit and rest.count(_FENCE) % 2 == 0:
            chunks.append(rest)
            break
        if len(rest) <= room:
            chunks.append(rest)
            break
        cut = _cut_point(rest, room)
        chunk, rest = rest[:cut].rstrip(), rest[cut:].strip()
        if chunk.count(_FENCE) % 2 == 1:
            chunk += "\n" + _FENCE
            rest = _FENCE + "\n" + rest
        if chunk.strip():
            chunks.append(chunk)
    return chunks


def _cut_point(text: str, room: int) -> int:
    """Where to end the next chunk of ``text`` (at most ``room`` characters)."""
    best = 0
    for separator in ("\n\n", "\n", " "):
        at = text.rfind(separator, _MIN_CUT, room + 1)
        if at >= room // 2:
            return at
        best = max(best, at)
    return best if best > 0 else room
