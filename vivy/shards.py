"""Which of the bot's gateway shards a process runs, and which guilds that makes its own.

Discord sends a guild's events to one shard: ``(guild_id >> 22) % shard_count``. A process
that runs shards ``ids`` of ``count`` therefore owns exactly the guilds that formula maps into
``ids``. On SQLite one process runs every shard (:attr:`Shards.complete`); processes sharing
a PostgreSQL database each lease their shards there, and :class:`Fence` carries the epochs
of the leases a process holds to every write of a channel buffer (fencing).
"""

from __future__ import annotations

from dataclasses import dataclass

from vivy.errors import LeaseLost

__all__ = ["ALL_SHARDS", "MAX_SHARDS", "Fence", "Shards", "parse_shard_ids", "shard_of"]

#: Most shards a bot may declare; far above what Discord assigns (one per 1,000 guilds).
MAX_SHARDS = 65536


def shard_of(guild_id: int, count: int) -> int:
    """The shard Discord sends the guild's events to."""
    return (guild_id >> 22) % count


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
        return shard_of(guild_id, self.count) in self.ids

    def describe(self) -> str:
        """The ids in the form :func:`parse_shard_ids` reads (``0-3,8``)."""
        runs: list[tuple[int, int]] = []
        for shard in self.ids:
            if runs and runs[-1][1] == shard - 1:
                runs[-1] = (runs[-1][0], shard)
            else:
                runs.append((shard, shard))
        return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


#: One process running every shard: the scope of a SQLite database and of tools.
ALL_SHARDS = Shards((0,), 1)


class Fence:
    """The epochs of the shard leases this process holds, read by every buffer write.

    The lease keeper sets an epoch when it acquires a shard and clears it when the lease is
    lost; the storage engine checks, inside each write's transaction, that the shard's lease
    still carries that epoch, so a process another one took over can never write.
    """

    def __init__(self, shards: Shards, owner: str) -> None:
        self.shards = shards
        #: Who this process is in the lease table (host, pid and a random part).
        self.owner = owner
        self._epochs: dict[int, int] = {}

    def hold(self, shard: int, epoch: int) -> None:
        """Record the epoch of a lease just acquired."""
        self._epochs[shard] = epoch

    def drop(self, shard: int) -> None:
        """Forget a lease that was lost."""
        self._epochs.pop(shard, None)

    @property
    def held(self) -> dict[int, int]:
        """Epoch by shard id, of every lease held now."""
        return dict(self._epochs)

    def token(self, guild_id: int) -> tuple[int, int]:
        """``(shard, epoch)`` a write for the guild must carry.

        Raises :class:`~vivy.errors.LeaseLost` when this process holds no lease on the
        guild's shard.
        """
        shard = shard_of(guild_id, self.shards.count)
        epoch = self._epochs.get(shard)
        if epoch is None:
            raise LeaseLost(
                f"guild {guild_id} is on shard {shard}, whose lease this process "
                f"({self.owner}) does not hold"
            )
        return shard, epoch


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
