"""Shard settings: which shards a process runs, and which guilds that makes its own."""

from __future__ import annotations

import pytest

from vivy.config import Settings
from vivy.errors import ConfigError
from vivy.shards import Shards, parse_shard_ids


def test_ids_and_ranges_parse_to_sorted_distinct_shards() -> None:
    """``0-2,5,1`` of 8 is shards 0, 1, 2 and 5; ``describe`` writes it back compactly."""
    shards = parse_shard_ids("0-2, 5,1", 8)
    assert shards == Shards((0, 1, 2, 5), 8)
    assert shards.describe() == "0-2,5"
    assert not shards.complete
    assert parse_shard_ids("0-7", 8).complete


@pytest.mark.parametrize(
    ("text", "problem"),
    [("8", "shard 8 is not among 8"), ("3-1", "runs backwards"), ("a", "not a shard id")],
)
def test_bad_shard_ids_say_what_is_wrong(text: str, problem: str) -> None:
    """Ids outside the count, backward ranges and words are refused with the reason."""
    with pytest.raises(ValueError, match=problem):
        parse_shard_ids(text, 8)


def test_a_guild_belongs_to_the_shard_discord_sends_it_to() -> None:
    """``(guild_id >> 22) % count``: a guild is owned by exactly one of a split's halves."""
    low, high = Shards((0, 1), 4), Shards((2, 3), 4)
    for guild in (175928847299117063, 81384788765712384, 1 << 22, 3 << 22):
        assert low.owns(guild) != high.owns(guild)
        assert (low if (guild >> 22) % 4 < 2 else high).owns(guild)


def test_settings_read_the_shards_and_refuse_a_partial_set() -> None:
    """One process runs every shard until shards can be leased; ids need a count."""
    assert Settings.from_env({}).shards is None
    assert Settings.from_env({"VIVY_SHARD_COUNT": "4"}).shards == Shards((0, 1, 2, 3), 4)
    full = {"VIVY_SHARD_COUNT": "2", "VIVY_SHARD_IDS": "0,1"}
    assert Settings.from_env(full).shards == Shards((0, 1), 2)
    with pytest.raises(ConfigError, match="runs 2 of 4 shards"):
        Settings.from_env({"VIVY_SHARD_COUNT": "4", "VIVY_SHARD_IDS": "0-1"})
    with pytest.raises(ConfigError, match="needs VIVY_SHARD_COUNT"):
        Settings.from_env({"VIVY_SHARD_IDS": "0"})
    with pytest.raises(ConfigError, match="VIVY_SHARD_COUNT='0' is out of range"):
        Settings.from_env({"VIVY_SHARD_COUNT": "0"})
