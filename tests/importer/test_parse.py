"""Reading and validating DiscordChatExporter exports, before anything is written."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from vivy.errors import VivyError
from vivy.importer import ImportFormatError, load_exports, parse_export

from . import ANA, BEN, BOT, CLEO, GUILD, LOUNGE, THREAD, THREAD_LATER, TWO_DAYS


def _at(text: str) -> float:
    return datetime.fromisoformat(text).astimezone(UTC).timestamp()


def test_array_of_exports_is_merged_in_timestamp_order() -> None:
    """Both channels of an array export come back as one batch sorted by time."""
    batch = load_exports([TWO_DAYS])
    assert batch.total == 25
    assert len(batch.messages) == 23
    assert batch.skipped_by_type == {"ChannelPinnedMessage": 1, "GuildMemberJoin": 1}
    times = [m.timestamp for m in batch.messages]
    assert times == sorted(times)
    assert batch.channel_ids == {LOUNGE, THREAD}
    assert [m.channel_id for m in batch.messages[:10]] == [LOUNGE] * 8 + [THREAD] * 2
    assert {m.guild_id for m in batch.messages} == {GUILD}


def test_fields_become_the_live_message_shape() -> None:
    """Display names, bots, replies, mentions and offsets map onto IncomingMessage."""
    by_text = {m.content: m for m in load_exports([TWO_DAYS]).messages}
    reply = by_text["that sounds exhausting, do you like the job?"]
    replied = by_text["I work at a bakery downtown so I was up at 4am both days"]
    assert reply.kind == "Reply"
    assert reply.reply_to == replied.message_id
    assert reply.incoming().reply_to == replied.message_id
    assert replied.author_name == "Cleo"  # nickname wins
    assert by_text["hey all, how was everyone's weekend?"].author_name == "Ana"
    ben = by_text["anyone know a good python testing library?"]
    assert (ben.author_id, ben.author_name) == (BEN, "ben")  # no nickname: the name
    mention = by_text["<@800000000000000001> are you still coming to movie night?"]
    assert mention.mentions == (ANA,)
    assert mention.incoming().mentions == (ANA,)
    assert reply.mentions == (CLEO,)
    bot = by_text["Reminder: movie night is Friday!"]
    assert bot.author_id == BOT and bot.incoming().author_is_bot
    flights = by_text["flights to Tokyo are cheaper in late May"]
    assert flights.timestamp == _at("2026-04-07T17:00:00+00:00")  # written as 12:00-05:00
    assert flights.channel_name == "trip-planning"


def test_overlapping_files_keep_each_message_once() -> None:
    """A message id in two files is imported once and counted as repeated."""
    batch = load_exports([TWO_DAYS, THREAD_LATER])
    assert batch.repeated == 3
    assert batch.total == 27
    ids = [m.message_id for m in batch.messages]
    assert len(ids) == len(set(ids)) == 25


def _fixture() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(TWO_DAYS.read_text())
    return data


def _set(path: tuple[Any, ...], value: Any) -> Callable[[list[dict[str, Any]]], None]:
    def mutate(data: list[dict[str, Any]]) -> None:
        node: Any = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return mutate


def _delete(path: tuple[Any, ...]) -> Callable[[list[dict[str, Any]]], None]:
    def mutate(data: list[dict[str, Any]]) -> None:
        node: Any = data
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return mutate


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            _set((0, "messages", 12, "timestamp"), "yesterday at noon"),
            "[0].messages[12].timestamp: not an ISO-8601 time",
        ),
        (
            _set((0, "messages", 3, "timestamp"), "2026-04-06T18:05:00"),
            "[0].messages[3].timestamp: ISO-8601 time without a UTC offset",
        ),
        (
            _set((1, "messages", 2, "id"), 1490777000000000001),
            "[1].messages[2].id: expected a Discord id string, got the number",
        ),
        (
            _delete((0, "messages", 5, "author", "isBot")),
            "[0].messages[5].author.isBot: missing",
        ),
        (
            _set((0, "messages", 7, "mentions"), "<@1>"),
            "[0].messages[7].mentions: expected an array, got the string '<@1>'",
        ),
        (
            _set((0, "messages", 7, "mentions", 0, "id"), None),
            "[0].messages[7].mentions[0].id: expected a Discord id string, got null",
        ),
        (_set((0, "messages", 0, "content"), 42), "[0].messages[0].content: expected a string"),
        (_delete((1, "channel", "name")), "[1].channel.name: missing"),
        (_delete((0, "guild")), "[0].guild: missing"),
        (
            _set((1,), {"messages_count": 3}),
            "[1]: not a DiscordChatExporter export (no guild, channel or messages); export the "
            "channel in the JSON format",
        ),
        (_set((0, "guild"), []), "[0].guild: expected an object, got an array"),
        (_set((1, "messages"), {}), "[1].messages: expected an array, got an object"),
        (
            _set((0, "messages", 3, "reference", "messageId"), "abc"),
            "[0].messages[3].reference.messageId: expected a Discord id string",
        ),
        (_delete((0, "messages", 1, "author")), "[0].messages[1].author: missing"),
        (
            _set((0, "messages", 5, "author", "isBot"), "true"),
            "[0].messages[5].author.isBot: expected true or false, got the string 'true'",
        ),
        (
            _set((0, "messages", 4, "author", "nickname"), 7),
            "[0].messages[4].author.nickname: expected a string, got the number 7",
        ),
        (
            _set((1, "messages", 0, "id"), "99999999999999999999"),
            "[1].messages[0].id: Discord id out of range",
        ),
        (
            _set((0, "messages", 2, "timestampEdited"), "soon"),
            "[0].messages[2].timestampEdited: not an ISO-8601 time",
        ),
    ],
)
def test_malformed_field_names_file_index_and_field(
    tmp_path: Path, mutate: Callable[[list[dict[str, Any]]], None], expected: str
) -> None:
    """A defect anywhere is reported as `file: path.to[index].field: problem`."""
    data = _fixture()
    mutate(data)
    bad = tmp_path / "export.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(ImportFormatError) as info:
        load_exports([TWO_DAYS, bad])
    assert str(info.value).startswith(f"{bad}: {expected}")
    assert isinstance(info.value, VivyError)


def test_single_object_paths_have_no_array_prefix() -> None:
    """In a one-export file the field path starts at ``messages``."""
    data = json.loads(THREAD_LATER.read_text())
    data["messages"][1]["timestamp"] = "2026-02-30T10:00:00+00:00"
    with pytest.raises(ImportFormatError, match=r"^later\.json: messages\[1\]\.timestamp: not an"):
        parse_export(json.dumps(data), "later.json")


def test_truncated_file_is_reported_with_its_position(tmp_path: Path) -> None:
    """A cut-off file fails as invalid JSON with the line, and says it may be truncated."""
    text = TWO_DAYS.read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    with pytest.raises(ImportFormatError) as info:
        load_exports([cut])
    message = str(info.value)
    assert message.startswith(f"{cut}: line ")
    assert "not valid JSON" in message and "truncated" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('"hello"', "top level: expected an export object or an array of them"),
        ("[]", "top level: an empty array holds no export"),
        ("[1]", "[0]: expected an object, got the number 1"),
    ],
)
def test_wrong_top_level_is_refused(text: str, expected: str) -> None:
    """Only an export object or a non-empty array of them is an export file."""
    with pytest.raises(ImportFormatError, match="^x.json: " + expected.replace("[", r"\[")):
        parse_export(text, "x.json")


def test_missing_file_and_directory_are_refused(tmp_path: Path) -> None:
    """A missing path or a directory fails with a one-line error naming it."""
    with pytest.raises(ImportFormatError, match="no such file"):
        load_exports([TWO_DAYS, tmp_path / "nope.json"])
    with pytest.raises(ImportFormatError, match="is a directory"):
        load_exports([tmp_path])
    with pytest.raises(ImportFormatError, match="no export files"):
        load_exports([])
