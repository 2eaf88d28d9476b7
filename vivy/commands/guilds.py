"""``vivy guilds``: the guilds a database remembers, with their counts.

The other operator commands take a guild id (``--guild``); this is where to find one, without
digging it out of a snapshot's file name. The database is only read.
"""

from __future__ import annotations

import argparse
import sys

from vivy.commands.db import add_database_option, database_target, read_only
from vivy.storage.engines import Target

__all__ = ["list_guilds", "register"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vivy guilds``."""
    parser = commands.add_parser(
        "guilds",
        help="list the guilds Vivy remembers, with note, member and message counts",
        description="List every guild the database remembers, one a line: its id, its notes, "
        "its members, the messages its conversation notes were written from (or that wait "
        "in its buffers), and its name when an export gave it. The database is "
        "only read.",
    )
    add_database_option(parser)
    parser.set_defaults(handler=lambda args: list_guilds(database_target(args)))


def list_guilds(database: Target) -> int:
    """Print the guilds of ``database``; returns the exit code."""
    with read_only(database) as store:
        guilds = store.guild_counts()
        names = store.guild_names()
    if not guilds:
        print("no guilds remembered yet", file=sys.stderr)
        return 0
    print(f"{'guild':<20} {'notes':>7} {'members':>8} {'messages':>9}  name")
    for guild in guilds:
        name = names.get(guild.guild_id, "")
        print(
            f"{guild.guild_id:<20} {guild.notes:>7} {guild.members:>8} {guild.messages:>9}  {name}"
        )
    return 0
