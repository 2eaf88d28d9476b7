"""Guilds' names: stored from their exports, shown beside the guilds' ids.

Written once for both engines (:mod:`vivy.storage.dialect`). A name is only a label: nothing
is scoped by it, and a guild without one is shown by its id.
"""

from __future__ import annotations

from collections.abc import Sequence

from vivy.storage.dialect import Tx

__all__ = ["guild_names", "set_guild_names"]


def set_guild_names(tx: Tx, names: Sequence[tuple[int, str]], now: float) -> None:
    """Record each (guild id, name), replacing the name it had; a name that did not change
    leaves its row as it was (a repeated import changes nothing)."""
    for guild_id, name in names:
        if name.strip():
            tx.execute(
                "INSERT INTO guild_names (guild_id, name, updated_at) VALUES (?, ?, ?)"
                " ON CONFLICT (guild_id) DO UPDATE SET name = excluded.name,"
                " updated_at = excluded.updated_at WHERE guild_names.name <> excluded.name",
                (guild_id, name.strip(), now),
            )


def guild_names(tx: Tx) -> dict[int, str]:
    """Every named guild's name, by id."""
    return {int(r[0]): str(r[1]) for r in tx.all("SELECT guild_id, name FROM guild_names")}
