"""Discord messages as the router sees them: hikari's message objects become the capture
pipeline's :class:`~vivy.state.gate.IncomingMessage` and :class:`~vivy.state.gate.IncomingEdit`,
with the name members see, the message replied to and whether a bot wrote it."""

from __future__ import annotations

import hikari

from vivy.state.gate import IncomingEdit, IncomingMessage

__all__ = ["CAPTURED_TYPES", "author_name", "incoming_edit", "incoming_message", "reference_id"]

#: Message types people write (system messages such as joins and pins are ignored).
CAPTURED_TYPES = frozenset({hikari.MessageType.DEFAULT, hikari.MessageType.REPLY})


def author_name(message: hikari.PartialMessage) -> str:
    """The name members see: server nickname, else global name, else username."""
    member = message.member
    if isinstance(member, hikari.Member):
        return member.display_name
    author = message.author
    if isinstance(author, hikari.User):
        return author.global_name or author.username
    return "someone"


def _is_bot(message: hikari.PartialMessage) -> bool:
    author = message.author
    return message.webhook_id not in (None, hikari.UNDEFINED) or (
        isinstance(author, hikari.User) and author.is_bot is True
    )


def reference_id(message: hikari.PartialMessage) -> int | None:
    """The id of the message this one replies to (forwards are not replies)."""
    ref = message.message_reference
    if not isinstance(ref, hikari.MessageReference) or ref.id is None:
        return None
    if ref.type != hikari.messages.MessageReferenceType.DEFAULT:
        return None
    return int(ref.id)


def incoming_message(
    message: hikari.Message, channel_name: str = "", *, guild_id: int | None = None
) -> IncomingMessage | None:
    """The router's view of a guild message; None for DMs and system messages.

    ``guild_id`` names the guild of a message read from a channel's history: Discord's REST
    messages do not carry it (gateway events do).
    """
    guild = guild_id if guild_id is not None else message.guild_id
    if guild is None or message.type not in CAPTURED_TYPES:
        return None
    return IncomingMessage(
        guild_id=int(guild),
        channel_id=int(message.channel_id),
        message_id=int(message.id),
        author_id=int(message.author.id),
        author_name=author_name(message),
        text=message.content or "",
        created_at=message.created_at.timestamp(),
        author_is_bot=_is_bot(message),
        channel_name=channel_name,
        reply_to=reference_id(message),
        mentions=tuple(int(user) for user in message.user_mentions_ids or ()),
    )


def incoming_edit(message: hikari.PartialMessage) -> IncomingEdit | None:
    """The router's view of an edit; None for DMs and updates that did not touch the text."""
    if message.guild_id is None or not isinstance(message.content, str):
        return None
    author = message.author
    return IncomingEdit(
        guild_id=int(message.guild_id),
        channel_id=int(message.channel_id),
        message_id=int(message.id),
        text=message.content,
        author_id=int(author.id) if isinstance(author, hikari.User) else None,
        author_is_bot=_is_bot(message),
    )
