"""Guilds and members as operators name them, and ``vivy members --guild G``.

Every command that reads a guild (``--guild``) accepts its Discord id or its name as
``vivy guilds`` prints it, and every command that takes a member (``vivy profile``, ``vivy ask
--as``, ``vivy export --member``) a Discord id or a name the member goes by in the guild, when
only one guild or member goes by it. A guild the database does not know is refused, instead of
reporting that nothing in it matches.
"""

from __future__ import annotations

import argparse

from vivy.commands.db import add_database_option, database_target, discord_id, read_only, snowflake
from vivy.errors import ConfigError
from vivy.storage.engines import Target
from vivy.storage.port import ReadOnlyStore

__all__ = [
    "add_guild_option",
    "guild_label",
    "guild_of",
    "guild_reference",
    "list_members",
    "member_of",
    "register",
]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vivy members``."""
    parser = commands.add_parser(
        "members",
        help="list a guild's members with their ids and fact counts",
        description="List the members Vivy knows in a guild, one a line: their Discord id, "
        "their active and retired profile facts, and their name (what the commands that take "
        "a member accept besides the id). The database is only read.",
    )
    add_guild_option(parser)
    add_database_option(parser)
    parser.set_defaults(handler=lambda args: list_members(database_target(args), args.guild))


def guild_reference(text: str) -> int | str:
    """An argparse type: a guild's Discord id (digits only), else its name."""
    word = text.strip()
    if not word:
        raise argparse.ArgumentTypeError("the guild is blank: give its Discord id or name")
    return discord_id(word) if word.isascii() and word.isdigit() else word


def add_guild_option(parser: argparse.ArgumentParser) -> None:
    """``--guild``, required: the guild the command reads, by id or name."""
    parser.add_argument(
        "--guild",
        type=guild_reference,
        required=True,
        help="the guild's Discord id or name (vivy guilds lists them)",
    )


def list_members(database: Target, guild: int | str) -> int:
    """Print the guild's members; returns the exit code."""
    with read_only(database) as store:
        guild_id = guild_of(store, guild)
        members = store.guild_members(guild_id)
        counts = store.member_fact_counts(guild_id)
        label = guild_label(store, guild_id)
    print(f"{len(members)} member{'' if len(members) == 1 else 's'} of {label}")
    print(f"{'member':<20} {'facts':>6} {'retired':>8}  name")
    for user_id, name in members:
        active, retired = counts.get(user_id, (0, 0))
        print(f"{user_id:<20} {active:>6} {retired:>8}  {name}")
    return 0


def guild_label(store: ReadOnlyStore, guild_id: int) -> str:
    """``Night Owls (871…)`` when the guild's name is known, else ``guild 871…``."""
    name = store.guild_names().get(guild_id)
    return f"{name} ({guild_id})" if name else f"guild {guild_id}"


def guild_of(store: ReadOnlyStore, guild: int | str) -> int:
    """The guild ``guild`` names: a Discord id the database remembers, else the one guild
    whose name is ``guild`` (ignoring case); refuses any other."""
    known = set(store.guild_ids())
    if isinstance(guild, int):
        if guild in known:
            return guild
        raise ConfigError(
            f"guild {guild} is not in this database; `vivy guilds` lists the guilds it remembers"
        )
    names = store.guild_names()
    wanted = guild.strip().casefold()
    found = sorted(g for g, name in names.items() if name.casefold() == wanted and g in known)
    if len(found) == 1:
        return found[0]
    if not found:
        raise ConfigError(
            f"no guild in this database is named {guild!r}; `vivy guilds` lists the guilds it "
            "remembers with their ids and names"
        )
    which = ", ".join(f"{names[g]} ({g})" for g in found)
    raise ConfigError(f"{guild!r} names more than one guild ({which}); pass the id")


def member_of(store: ReadOnlyStore, guild_id: int, text: str) -> int:
    """The member ``text`` names in the guild: a Discord id as it is, else the one member whose
    display name or a known name is ``text`` (ignoring case)."""
    word = text.strip()
    user_id = snowflake(word)
    if user_id is not None:
        return user_id
    wanted = word.lstrip("@").casefold()
    members = store.guild_members(guild_id)
    found = [user for user, name in members if name.casefold() == wanted]
    if not found:
        found = store.members_known_as(guild_id, word.lstrip("@"))
    if len(found) == 1:
        return found[0]
    if not found:
        where = guild_label(store, guild_id)
        raise ConfigError(
            f"no member of {where} goes by {text!r}; `vivy members --guild {guild_id}` lists "
            "them with their ids"
        )
    names = dict(members)
    which = ", ".join(f"{names.get(user, '?')} ({user})" for user in found)
    raise ConfigError(f"{text!r} is more than one member ({which}); pass the id")
