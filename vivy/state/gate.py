"""Which incoming messages Vivy may remember, decided without I/O.

The gating of what is remembered is configuration, not code:
Vivy's own messages and other bots' are never captured, nor messages from blacklisted users or
channels, from guilds outside the allowed set, or from members who opted out. Text is
normalised here too: empty or whitespace-only text (attachment- or embed-only messages) is
dropped, and text over the length limit is truncated, keeping the message id.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "MAX_TEXT_CHARS",
    "CapturePolicy",
    "IncomingDelete",
    "IncomingEdit",
    "IncomingMessage",
    "IngestOutcome",
    "admit",
    "normalize_text",
]

#: Longest text kept for one message; Discord allows 4,000 characters with Nitro.
MAX_TEXT_CHARS = 4000

_CONTROL = [c for c in (*range(0x20), *range(0x7F, 0xA0)) if chr(c) not in "\n\t"]
#: Invisible format characters (category Cf: zero-width, bidi overrides, the tag block that
#: can smuggle hidden ASCII). Every one lies below U+30000 or in the tag block.
_FORMAT = [
    c for c in (*range(0x30000), *range(0xE0000, 0xE1000)) if unicodedata.category(chr(c)) == "Cf"
]
_DROP = dict.fromkeys([*_FORMAT, *_CONTROL])


class IngestOutcome(StrEnum):
    """What became of one incoming create, edit or delete event."""

    STORED = "stored"
    EDITED = "edited"
    DELETED = "deleted"
    DUPLICATE = "duplicate"
    EXCLUDED_BOT = "excluded_bot"
    EXCLUDED_BLACKLIST = "excluded_blacklist"
    EXCLUDED_GUILD = "excluded_guild"
    EXCLUDED_OPT_OUT = "excluded_opt_out"
    EMPTY = "empty"
    TRUNCATED = "truncated"
    UNKNOWN_EDIT = "unknown_edit"
    UNKNOWN_DELETE = "unknown_delete"
    CAPTURE_DISABLED = "capture_disabled"


@dataclass(frozen=True, slots=True)
class IncomingMessage:
    """A created message as the gateway or an import delivers it."""

    guild_id: int
    channel_id: int
    message_id: int
    author_id: int
    author_name: str
    text: str
    created_at: float
    author_is_bot: bool = False
    channel_name: str = ""
    reply_to: int | None = None
    mentions: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class IncomingEdit:
    """An edited message; only its id, channel and new text matter."""

    guild_id: int
    channel_id: int
    message_id: int
    text: str
    author_id: int | None = None
    author_is_bot: bool = False


@dataclass(frozen=True, slots=True)
class IncomingDelete:
    """A deleted message."""

    guild_id: int
    channel_id: int
    message_id: int


@dataclass(frozen=True, slots=True)
class CapturePolicy:
    """The configured gate: who and where Vivy may remember."""

    own_user_id: int | None = None
    allowed_guilds: frozenset[int] | None = None
    blacklisted_users: frozenset[int] = frozenset()
    blacklisted_channels: frozenset[int] = frozenset()
    capture_enabled: bool = True


def admit(
    policy: CapturePolicy,
    *,
    guild_id: int,
    channel_id: int,
    author_id: int | None,
    author_is_bot: bool,
    opted_out: bool,
) -> IngestOutcome | None:
    """The exclusion that applies to a message, or None when it may be captured."""
    if not policy.capture_enabled:
        return IngestOutcome.CAPTURE_DISABLED
    if author_is_bot or (author_id is not None and author_id == policy.own_user_id):
        return IngestOutcome.EXCLUDED_BOT
    if policy.allowed_guilds is not None and guild_id not in policy.allowed_guilds:
        return IngestOutcome.EXCLUDED_GUILD
    if channel_id in policy.blacklisted_channels or author_id in policy.blacklisted_users:
        return IngestOutcome.EXCLUDED_BLACKLIST
    if opted_out:
        return IngestOutcome.EXCLUDED_OPT_OUT
    return None


def normalize_text(text: str) -> tuple[str, bool] | None:
    """Text ready to store and whether it was truncated; None when nothing visible is left.

    Invisible format characters (zero-width, bidi controls, tag characters) and control
    characters (but newlines and tabs) are removed, line endings unified and surrounding
    whitespace stripped; text over :data:`MAX_TEXT_CHARS` is cut to that length.
    """
    if not text.isprintable():  # only then can it hold a character to remove (fast path)
        text = text.replace("\r\n", "\n").translate(_DROP)
    cleaned = text.strip()
    if not cleaned:
        return None
    if len(cleaned) > MAX_TEXT_CHARS:
        return cleaned[:MAX_TEXT_CHARS], True
    return cleaned, False
