"""Guilds and members as operators name them, and ``vivy members``.

Every command that takes a member (``vivy profile``, ``vivy ask --as``, ``vivy export
--member``) accepts a Discord id or a name the member goes by in the guild, when only one
member goes by it; every command that takes a guild refuses one the database does not know,
instead of reporting that nothing in it matches.
"""

from __future__ import annotations

from vivy.errors import ConfigError
from vivy.storage.port import ReadOnlyStore

__all__ = ["member_of", "require_guild"]


def require_guild(store: ReadOnlyStore, guild_id: int) -> None:
    """Refuse ``guild_id`` when the database remembers nothing of it."""
    if guild_id not in store.guild_ids():
        raise ConfigError(
            f"guild {guild_id} is not in this database; `vivy guilds` lists the guilds it remembers"
        )


def member_of(store: ReadOnlyStore, guild_id: int, text: str) -> int:
    """The member ``text`` names in the guild: a Discord id as it is, else the one member whose
    display name or a known name is ``text`` (ignoring case)."""
    word = text.strip()
    if word.isascii() and word.isdigit() and len(word) <= 20 and int(word) < 2**63:
        return int(word)
    wanted = word.lstrip("@").casefold()
    members = store.guild_members(guild_id)
    found = [user for user, name in members if name.casefold() == wanted]
    if not found:
        found = store.members_known_as(guild_id, word.lstrip("@"))
    if len(found) == 1:
        return found[0]
    if not found:
        raise ConfigError(
            f"no member of guild {guild_id} goes by {text!r}; `vivy members --guild "
            f"{guild_id}` lists them with their ids"
        )
    names = dict(members)
    which = ", ".join(f"{names.get(user, '?')} ({user})" for user in found)
    raise ConfigError(f"{text!r} is more than one member ({which}); pass the id")
