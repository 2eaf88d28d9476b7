"""Which of the bot's gateway shards a process runs, and which guilds that makes its own.

Discord sends a guild's events to one shard: ``(guild_id >> 22) % shard_count``. A process
that runs shards ``ids`` of ``count`` therefore owns exactly the guilds that formula maps into
``ids``. Until processes can lease shards from a shared database, one process runs every
shard (:attr:`Shards.complete`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MAX_SHARDS", "Shards", "parse_shard_ids"]

#: Most shards a bot may declare; far above what Discord assigns (one per 1,000 guilds).
MAX_SHARDS = 65536


@dataclass(frozen=True, slots=True)
class Shards:
    """Shards ``ids`` (sorted, distinct) of ``count``."""

    ids: tuple[int, ...]
    count: int

    @property
    def complete(self) -> bool:
        """Whether every shard is run here."""
        return len(self.ids) == self.count

    def owns(self, guild_id: int) -> bool:
        """Whether the guild's events come to one of these shards."""
        return (guild_id >> 22) % self.count in self.ids

    def describe(self) -> str:
        """The ids in the form :func:`parse_shard_ids` reads (``0-3,8``)."""
        runs: list[tuple[int, int]] = []
        for shard in self.ids:
            if runs and runs[-1][1] == shard - 1:
                runs[-1] = (runs[-1][0], shard)
            else:
                runs.append((shard, shard))
        return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def parse_shard_ids(text: str, count: int) -> Shards:
    """The shards named by ``text`` (ids and ranges, ``0-3,8``) of ``count``.

    Raises ValueError saying what is wrong, for the caller to name the setting.
    """
    ids: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        low, dash, high = part.partition("-")
        if not low.strip().isdigit() or (dash and not high.strip().isdigit()):
            raise ValueError(f"{part!r} is not a shard id or a range like 0-3")
        first, last = int(low), int(high) if dash else int(low)
        if first > last:
            raise ValueError(f"the range {part!r} runs backwards")
        if last >= count:
            raise ValueError(f"shard {last} is not among {count} (ids are 0 to {count - 1})")
        ids.update(range(first, last + 1))
    return Shards(tuple(sorted(ids)), count)
