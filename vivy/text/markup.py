"""Discord markup in message text: made readable for quoting, or removed for reading.

Messages carry markup that is ids, not words: user, role and channel mentions (``<@id>``,
``<@&id>``, ``<#id>``), custom emoji (``<:name:id>``) and links. :func:`readable` turns it
into text a person reads ("@Sam", "#channel", ":wave:"), :func:`plain` removes it before a
message is analysed, and :func:`strip_markup` before a question is searched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

__all__ = ["plain", "readable", "strip_markup", "talks_to_outsider"]

#: Discord markup that carries ids, not words: user, role and channel mentions, custom emoji.
_ID_MARKUP = re.compile(r"<(?:@[!&]?|#|a?:\w+:)\d+>")
_PLAIN_URL = re.compile(r"https?://\S+")


def strip_markup(text: str) -> str:
    """``text`` without Discord mentions, custom emoji and URLs (ids and links, not words)."""
    return " ".join(_PLAIN_URL.sub(" ", _ID_MARKUP.sub(" ", text)).split())


_USER_MENTION = re.compile(r"<@!?(?P<id>\d+)>")
_ROLE_MENTION = re.compile(r"<@&\d+>")
_CHANNEL_MENTION = re.compile(r"<#\d+>")
_CUSTOM_EMOJI = re.compile(r"<a?:(?P<name>\w+):\d+>")
_MARKUP_TAG = re.compile(r"</?[A-Za-z_][\w-]*(?:\s[^<>]*)?>")
_URL = re.compile(r"https?://\S+|\b(?:[\w-]+\.)+[A-Za-z]{2,}/\S*")
_LEADING_AT = re.compile(r"^\s*@(?P<name>[\w.-]+)")


def readable(text: str, names: Mapping[int, str]) -> str:
    """``text`` with Discord markup made readable for quoting.

    ``<@id>`` becomes "@Name" when the id belongs to someone in the conversation and
    "@someone" otherwise; role and channel mentions and custom emoji lose their ids.
    """

    def user(match: re.Match[str]) -> str:
        name = names.get(int(match["id"]))
        return f"@{name}" if name else "@someone"

    text = _USER_MENTION.sub(user, text)
    text = _ROLE_MENTION.sub("@role", _CHANNEL_MENTION.sub("#channel", text))
    return " ".join(_CUSTOM_EMOJI.sub(lambda match: f":{match['name']}:", text).split())


@lru_cache(maxsize=4096)
def plain(text: str) -> str:
    """``text`` without mentions, markup tags, custom emoji and links, for analysis."""
    text = _URL.sub(" ", _ID_MARKUP.sub(" ", text))
    return _MARKUP_TAG.sub(" ", text).replace("’", "'")


def talks_to_outsider(text: str, names: Mapping[int, str]) -> bool:
    """Whether a message mentions someone outside the conversation, usually the bot.

    The bot's own messages never reach a transcript, so a mention of an id that is not
    among the conversation's authors (or a leading "@Name" that is not one of theirs) is
    almost always aimed at it.
    """
    if any(int(match["id"]) not in names for match in _USER_MENTION.finditer(text)):
        return True
    match = _LEADING_AT.match(text)
    if match is None or match["name"] is None:
        return False
    return match["name"].lower() not in {name.lower() for name in names.values()}
