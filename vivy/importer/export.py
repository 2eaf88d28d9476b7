"""Reading DiscordChatExporter exports: pydantic models, and errors that name the field.

A file holds one export object (``guild``, ``channel``, ``messages``) or a JSON array of them.
The models below state what an export must hold; pydantic checks it, and the first error it
finds becomes one :class:`ImportFormatError` line naming the file, the path of the field and
the problem (``export.json: [0].messages[12].timestamp: not an ISO-8601 time``). Fields Vivy
does not read are ignored; ``guild.name`` and ``channel.type`` are required all the same, as
a check that the file is an export at all.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails, PydanticCustomError

from vivy.errors import VivyError
from vivy.state.gate import IncomingMessage

__all__ = [
    "ACCEPTED_TYPES",
    "ExportBatch",
    "ExportMessage",
    "ImportFormatError",
    "load_exports",
    "parse_export",
]

#: Message types that are conversation; every other type (system entries) is skipped.
ACCEPTED_TYPES = frozenset({"Default", "Reply"})


class ImportFormatError(VivyError):
    """An export file is missing, unreadable or not a valid DiscordChatExporter export.

    The message names the file and, for a defect inside it, the path of the offending field
    (``export.json: messages[12].timestamp: not an ISO-8601 time``).
    """


@dataclass(frozen=True, slots=True)
class ExportMessage:
    """One message of an export, validated and typed."""

    guild_id: int
    channel_id: int
    channel_name: str
    message_id: int
    kind: str
    timestamp: float
    author_id: int
    author_name: str
    author_is_bot: bool
    content: str
    mentions: tuple[int, ...] = ()
    reply_to: int | None = None
    #: The guild's name as the export gives it.
    guild_name: str = ""

    def incoming(self) -> IncomingMessage:
        """The message as the gateway would deliver it."""
        return IncomingMessage(
            guild_id=self.guild_id,
            channel_id=self.channel_id,
            message_id=self.message_id,
            author_id=self.author_id,
            author_name=self.author_name,
            text=self.content,
            created_at=self.timestamp,
            author_is_bot=self.author_is_bot,
            channel_name=self.channel_name,
            reply_to=self.reply_to,
            mentions=self.mentions,
        )


@dataclass(frozen=True, slots=True)
class ExportBatch:
    """Every file of one import, validated: the conversation messages in timestamp order."""

    files: tuple[str, ...]
    messages: tuple[ExportMessage, ...]
    total: int
    skipped_by_type: Mapping[str, int]
    repeated: int

    @property
    def channel_ids(self) -> frozenset[int]:
        """Channels (and threads) the batch covers."""
        return frozenset(m.channel_id for m in self.messages)

    @property
    def guild_names(self) -> list[tuple[int, str]]:
        """Each guild of the batch with its name in the newest export, in id order."""
        names = {m.guild_id: m.guild_name for m in self.messages if m.guild_name}
        return sorted(names.items())


# --- field types ----------------------------------------------------------------------------

_SNOWFLAKE = re.compile(r"[0-9]{1,20}")


def _kind(value: object) -> str:
    """How an error names a value of the wrong kind."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _snowflake(value: object) -> int:
    """A Discord id, which exports write as a decimal string."""
    if not isinstance(value, str) or not _SNOWFLAKE.fullmatch(value):
        raise PydanticCustomError(
            "snowflake", "expected a Discord id string, got {kind}", {"kind": _kind(value)}
        )
    number = int(value)
    if number >= 2**63:
        raise PydanticCustomError("snowflake", "Discord id out of range")
    return number


def _optional_snowflake(value: object) -> int | None:
    return None if value is None else _snowflake(value)


def _time(value: object) -> float:
    """Epoch seconds of an ISO-8601 time with a UTC offset."""
    if not isinstance(value, str):
        raise PydanticCustomError("time", "not an ISO-8601 time")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise PydanticCustomError("time", "not an ISO-8601 time") from None
    if parsed.tzinfo is None:
        raise PydanticCustomError("time", "ISO-8601 time without a UTC offset")
    return parsed.timestamp()


def _optional_time(value: object) -> float | None:
    return None if value is None else _time(value)


Snowflake = Annotated[int, PlainValidator(_snowflake)]
OptionalSnowflake = Annotated[int | None, PlainValidator(_optional_snowflake)]
Time = Annotated[float, PlainValidator(_time)]
OptionalTime = Annotated[float | None, PlainValidator(_optional_time)]


# --- the export model -----------------------------------------------------------------------


#: DiscordChatExporter's channel types of direct messages and group DMs (exported under a
#: guild of id 0): conversations outside any server, which Vivy does not remember.
DIRECT_CHANNEL_TYPES: Final = frozenset({"DirectTextChat", "DirectGroupTextChat"})


class _Strict(BaseModel):
    """No coercion (``"true"`` is not a boolean, ``1`` not a string); unknown keys ignored."""

    model_config = ConfigDict(strict=True, frozen=True)


class _Guild(_Strict):
    id: Snowflake
    name: str


class _Channel(_Strict):
    id: Snowflake
    type: str
    name: str


class _Author(_Strict):
    id: Snowflake
    name: str
    nickname: str | None = None
    is_bot: bool = Field(alias="isBot")

    @property
    def display_name(self) -> str:
        """The server nickname when there is one, else the account name."""
        return self.nickname or self.name


class _Mention(_Strict):
    id: Snowflake


class _Reference(_Strict):
    message_id: OptionalSnowflake = Field(default=None, alias="messageId")


class _Message(_Strict):
    id: Snowflake
    type: str
    timestamp: Time
    timestamp_edited: OptionalTime = Field(default=None, alias="timestampEdited")
    content: str
    author: _Author
    mentions: list[_Mention]
    reference: _Reference | None = None


class _ChannelExport(_Strict):
    """One channel's (or thread's) export."""

    guild: _Guild
    channel: _Channel
    messages: list[_Message]

    def found(self) -> list[ExportMessage]:
        """Every message of the channel, of every type."""
        return [
            ExportMessage(
                guild_id=self.guild.id,
                channel_id=self.channel.id,
                channel_name=self.channel.name,
                message_id=m.id,
                kind=m.type,
                timestamp=m.timestamp,
                author_id=m.author.id,
                author_name=m.author.display_name,
                author_is_bot=m.author.is_bot,
                content=m.content,
                mentions=tuple(dict.fromkeys(mention.id for mention in m.mentions)),
                reply_to=None if m.reference is None else m.reference.message_id,
                guild_name=self.guild.name,
            )
            for m in self.messages
        ]


_ONE: Final[TypeAdapter[_ChannelExport]] = TypeAdapter(_ChannelExport)
_MANY: Final[TypeAdapter[list[_ChannelExport]]] = TypeAdapter(list[_ChannelExport])

#: The problem of each pydantic error type, phrased for export files; ``{kind}`` names the
#: value found. Our own field types raise errors already phrased.
_PROBLEMS: Final = {
    "missing": "missing",
    "string_type": "expected a string, got {kind}",
    "bool_type": "expected true or false, got {kind}",
    "list_type": "expected an array, got {kind}",
    "model_type": "expected an object, got {kind}",
    "model_attributes_type": "expected an object, got {kind}",
    "dict_type": "expected an object, got {kind}",
}


def _where(loc: Sequence[int | str]) -> str:
    """``messages[3].author.isBot`` for pydantic's ``("messages", 3, "author", "isBot")``."""
    where = ""
    for part in loc:
        where += f"[{part}]" if isinstance(part, int) else f".{part}" if where else part
    return where


#: The keys every DiscordChatExporter JSON export has at its top level.
_EXPORT_KEYS: Final = ("guild", "channel", "messages")


def _format_error(file: str, error: ErrorDetails) -> ImportFormatError:
    """The one-line error for pydantic's first error in ``file``; an object with none of an
    export's keys is named as what it is, not by the first key it lacks."""
    found, loc = error["input"], error["loc"]
    not_an_export = isinstance(found, dict) and not any(key in found for key in _EXPORT_KEYS)
    if error["type"] == "missing" and loc[-1] in _EXPORT_KEYS and not_an_export:
        where = _where(loc[:-1]) or "top level"
        return ImportFormatError(
            f"{file}: {where}: not a DiscordChatExporter export (no guild, channel or "
            "messages); export the channel in the JSON format"
        )
    template = _PROBLEMS.get(error["type"])
    problem = error["msg"] if template is None else template.format(kind=_kind(error["input"]))
    return ImportFormatError(f"{file}: {_where(error['loc']) or 'top level'}: {problem}")


def parse_export(text: str, file: str) -> list[ExportMessage]:
    """Every message of one file's text, validated; raises :class:`ImportFormatError`.

    Messages of every type are returned; the caller skips the non-conversation ones. Text
    that opens like an export is validated straight from JSON (pydantic parses it, which is
    faster than building Python objects first); anything else, or JSON pydantic refuses, is
    decoded by :mod:`json`, which names the line and column of a defect.
    """
    opening = text.lstrip()[:1]
    adapter = _MANY if opening == "[" else _ONE if opening == "{" else None
    if adapter is not None:
        try:
            return _messages(file, adapter.validate_json(text))
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            if error["type"] != "json_invalid":
                raise _format_error(file, error) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(
            f"{file}: line {exc.lineno} column {exc.colno}: not valid JSON"
            f" ({exc.msg}); the file may be truncated"
        ) from None
    if not isinstance(data, list | dict):
        raise ImportFormatError(f"{file}: top level: expected an export object or an array of them")
    try:
        adapter = _MANY if isinstance(data, list) else _ONE
        return _messages(file, adapter.validate_python(data))
    except ValidationError as exc:
        raise _format_error(file, exc.errors(include_url=False)[0]) from None


def _messages(file: str, parsed: _ChannelExport | list[_ChannelExport]) -> list[ExportMessage]:
    """The messages of a validated file: one export, or a non-empty array of them."""
    if parsed == []:
        raise ImportFormatError(f"{file}: top level: an empty array holds no export")
    exports = parsed if isinstance(parsed, list) else [parsed]
    for export in exports:
        if export.guild.id == 0 or export.channel.type in DIRECT_CHANNEL_TYPES:
            raise ImportFormatError(
                f"{file}: #{export.channel.name} is a direct-message export; Vivy remembers "
                "servers: export a server's channels instead"
            )
    return [message for export in exports for message in export.found()]


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ImportFormatError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ImportFormatError(f"{path}: is a directory, not an export file") from None
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ImportFormatError(f"{path}: cannot read: {exc.strerror}") from None


def load_exports(paths: Sequence[str | Path]) -> ExportBatch:
    """Read and validate every file; the conversation messages of all, in timestamp order.

    A message id seen twice (overlapping exports) is kept once. Nothing is written.
    """
    if not paths:
        raise ImportFormatError("no export files given")
    found: dict[int, ExportMessage] = {}
    skipped: Counter[str] = Counter()
    total = repeated = 0
    for path in map(Path, paths):
        for message in parse_export(_read(path), str(path)):
            if message.message_id in found:
                repeated += 1
                continue
            total += 1
            if message.kind not in ACCEPTED_TYPES:
                skipped[message.kind] += 1
                continue
            found[message.message_id] = message
    ordered = sorted(found.values(), key=lambda m: (m.timestamp, m.message_id))
    return ExportBatch(
        files=tuple(str(p) for p in paths),
        messages=tuple(ordered),
        total=total,
        skipped_by_type=dict(skipped),
        repeated=repeated,
    )
