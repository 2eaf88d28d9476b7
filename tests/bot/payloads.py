"""Raw Discord payloads (gateway events and REST bodies), shaped as Discord sends them."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "DISCORD_EPOCH_MS",
    "dm_message",
    "guild_create",
    "interaction",
    "member",
    "message",
    "message_delete",
    "message_update",
    "next_snowflake",
    "rest_message",
    "text_channel",
    "user",
]

#: Discord's snowflake epoch (2015-01-01) in Unix milliseconds.
DISCORD_EPOCH_MS = 1_420_070_400_000

_counter = itertools.count(1)


def next_snowflake() -> int:
    """A fresh id whose timestamp is now, unique within the test run."""
    return ((int(time.time() * 1000) - DISCORD_EPOCH_MS) << 22) | (next(_counter) & 0x3FFFFF)


def _iso(snowflake: int) -> str:
    ms = (snowflake >> 22) + DISCORD_EPOCH_MS
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat()


def user(
    user_id: int, username: str, *, bot: bool = False, global_name: str | None = None
) -> dict[str, Any]:
    """A user object."""
    return {
        "id": str(user_id),
        "username": username,
        "global_name": global_name,
        "discriminator": "0",
        "avatar": None,
        "bot": bot,
        "public_flags": 0,
    }


def member(nick: str | None = None, *, permissions: int | None = None) -> dict[str, Any]:
    """A guild member object (without its user, as message payloads carry it)."""
    found: dict[str, Any] = {
        "roles": [],
        "joined_at": "2024-01-01T00:00:00+00:00",
        "deaf": False,
        "mute": False,
        "nick": nick,
        "flags": 0,
        "pending": False,
    }
    if permissions is not None:
        found["permissions"] = str(permissions)
    return found


def message(
    message_id: int,
    author: Mapping[str, Any],
    content: str,
    *,
    channel_id: int,
    guild_id: int | None,
    nick: str | None = None,
    mentions: Sequence[Mapping[str, Any]] = (),
    reply_to: int | None = None,
    referenced: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A MESSAGE_CREATE payload (or a REST message object)."""
    payload: dict[str, Any] = {
        "id": str(message_id),
        "channel_id": str(channel_id),
        "author": dict(author),
        "content": content,
        "timestamp": _iso(message_id),
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": [dict(m) for m in mentions],
        "mention_roles": [],
        "attachments": [],
        "embeds": [],
        "pinned": False,
        "type": 19 if reply_to is not None else 0,
        "flags": 0,
        "components": [],
    }
    if guild_id is not None:
        payload["guild_id"] = str(guild_id)
        payload["member"] = member(nick)
    if reply_to is not None:
        payload["message_reference"] = {
            "type": 0,
            "message_id": str(reply_to),
            "channel_id": str(channel_id),
            **({"guild_id": str(guild_id)} if guild_id is not None else {}),
        }
        payload["referenced_message"] = dict(referenced) if referenced is not None else None
    return payload


def dm_message(message_id: int, author: Mapping[str, Any], content: str) -> dict[str, Any]:
    """A direct message (no guild)."""
    return message(message_id, author, content, channel_id=message_id - 1, guild_id=None)


def message_update(
    message_id: int, author: Mapping[str, Any], content: str, *, channel_id: int, guild_id: int
) -> dict[str, Any]:
    """A MESSAGE_UPDATE payload carrying new content."""
    return {
        "id": str(message_id),
        "channel_id": str(channel_id),
        "guild_id": str(guild_id),
        "author": dict(author),
        "content": content,
        "edited_timestamp": datetime.now(tz=UTC).isoformat(),
        "mentions": [],
        "type": 0,
    }


def message_delete(message_id: int, *, channel_id: int, guild_id: int) -> dict[str, Any]:
    """A MESSAGE_DELETE payload."""
    return {"id": str(message_id), "channel_id": str(channel_id), "guild_id": str(guild_id)}


def interaction(
    *,
    application_id: int,
    guild_id: int,
    channel_id: int,
    invoker: Mapping[str, Any],
    subcommand: str,
    options: Mapping[str, Any] | None = None,
    permissions: int = 0,
    nick: str | None = None,
    resolved_users: Iterable[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """An INTERACTION_CREATE payload for ``/memory <subcommand>``."""
    option_types = {str: 3, int: 6}
    sub: dict[str, Any] = {"name": subcommand, "type": 1}
    if options:
        sub["options"] = [
            {
                "name": name,
                "type": option_types[type(value)],
                "value": str(value) if isinstance(value, int) else value,
            }
            for name, value in options.items()
        ]
    data: dict[str, Any] = {
        "id": "1100000000000000001",
        "name": "memory",
        "type": 1,
        "options": [sub],
    }
    users = {u["id"]: dict(u) for u in resolved_users}
    if users:
        data["resolved"] = {"users": users}
    invoker_member = member(nick, permissions=permissions)
    invoker_member["user"] = dict(invoker)
    interaction_id = next_snowflake()
    return {
        "id": str(interaction_id),
        "application_id": str(application_id),
        "type": 2,
        "token": f"token-{interaction_id}",
        "version": 1,
        "guild_id": str(guild_id),
        "guild_locale": "en-US",
        "locale": "en-US",
        "channel_id": str(channel_id),
        "channel": {"id": str(channel_id), "type": 0, "name": "general", "permissions": "0"},
        "member": invoker_member,
        "data": data,
        "app_permissions": "0",
        "entitlements": [],
        "authorizing_integration_owners": {"0": str(guild_id)},
        "context": 0,
        "attachment_size_limit": 8388608,
    }


def rest_message(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A message as Discord's REST API returns it: a gateway payload without the
    ``guild_id`` and ``member`` only gateway events carry."""
    return {key: value for key, value in payload.items() if key not in ("guild_id", "member")}


def text_channel(
    channel_id: int, guild_id: int, name: str = "", *, last_message_id: int | None = None
) -> dict[str, Any]:
    """A guild text channel object."""
    return {
        "id": str(channel_id),
        "guild_id": str(guild_id),
        "type": 0,
        "name": name or f"channel-{channel_id}",
        "position": 0,
        "permission_overwrites": [],
        "nsfw": False,
        "topic": None,
        "last_message_id": str(last_message_id) if last_message_id is not None else None,
        "parent_id": None,
        "rate_limit_per_user": 0,
    }


def guild_create(
    guild_id: int,
    channel_ids: Iterable[int],
    *,
    owner_id: int = 1,
    last_message_ids: Mapping[int, int] | None = None,
) -> dict[str, Any]:
    """The GUILD_CREATE that makes a guild of READY available (``unavailable: false``), with
    its text channels (and the id of each one's newest message)."""
    last = last_message_ids or {}
    return {
        "id": str(guild_id),
        "name": f"guild-{guild_id}",
        "icon": None,
        "splash": None,
        "discovery_splash": None,
        "owner_id": str(owner_id),
        "afk_channel_id": None,
        "afk_timeout": 300,
        "verification_level": 0,
        "default_message_notifications": 0,
        "explicit_content_filter": 0,
        "roles": [],
        "emojis": [],
        "stickers": [],
        "features": [],
        "mfa_level": 0,
        "application_id": None,
        "system_channel_id": None,
        "system_channel_flags": 0,
        "rules_channel_id": None,
        "vanity_url_code": None,
        "description": None,
        "banner": None,
        "premium_tier": 0,
        "preferred_locale": "en-US",
        "public_updates_channel_id": None,
        "nsfw_level": 0,
        "premium_progress_bar_enabled": False,
        "joined_at": "2024-01-01T00:00:00+00:00",
        "large": False,
        "unavailable": False,
        "member_count": 1,
        "members": [],
        "voice_states": [],
        "presences": [],
        "threads": [],
        "stage_instances": [],
        "guild_scheduled_events": [],
        "channels": [text_channel(c, guild_id, last_message_id=last.get(c)) for c in channel_ids],
    }
