"""``vivy migrate-v1``: the v1 bot's active facts become profile facts of one guild.

The v1 bot kept facts per user with no guild (``facts`` joined to ``users``); the operator
names the guild they belong to. Each active fact becomes a fact in section ``other`` with
``source_kind`` ``migrated`` and the label ``migrated from v1 fact #ID``, which also makes a
re-run add nothing. The same guards as for learnt facts apply: instruction-like and over-long
facts are skipped and counted, and so are facts of members who opted out or are blacklisted,
repeats of an active fact, and facts beyond the section and profile caps (newest kept first).
``facts`` and ``vec_facts`` are only read. Everything is written in one transaction.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path

from vivy.clock import system_now
from vivy.commands.db import add_database_option, database_target, discord_id, existing
from vivy.config import Settings
from vivy.errors import StorageError
from vivy.storage.engines import Target
from vivy.storage.v1 import V1Migration, migrate_v1_database

__all__ = ["format_migration", "register", "run_migration"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vivy migrate-v1``."""
    parser = commands.add_parser(
        "migrate-v1",
        help="turn the v1 bot's active facts into profile facts of a guild",
        description="Copy the v1 bot's active facts (its facts table) into the profiles "
        "of one guild, section 'other', citing 'migrated from v1 fact #ID'. Facts that fail the "
        "guards are skipped and counted. Running it again adds nothing.",
    )
    parser.add_argument(
        "--guild", type=discord_id, required=True, help="the guild the v1 facts belong to"
    )
    parser.add_argument(
        "--from",
        dest="source",
        metavar="V1_DB",
        default=None,
        help="read the v1 tables from this SQLite file (default: the Vivy database itself,"
        " when it is a SQLite file)",
    )
    add_database_option(parser)
    parser.set_defaults(
        handler=lambda args: run_migration(
            database_target(args),
            args.guild,
            source=Path(args.source) if args.source else None,
        )
    )


def run_migration(
    database: Target,
    guild_id: int,
    *,
    source: Path | None = None,
    environ: Mapping[str, str] | None = None,
    now: float | None = None,
) -> int:
    """Migrate the v1 facts into ``guild_id``; prints what was done and returns the exit code."""
    settings = Settings.from_env(os.environ if environ is None else environ)
    existing(database)
    if source is not None and not source.is_file():
        raise StorageError(f"no such v1 database file: {source}")
    # The command line is the entry point, so it is where wall time is read.
    at = system_now() if now is None else now
    report = migrate_v1_database(
        database, guild_id, at, source=source, blacklisted_users=settings.blacklisted_users
    )
    print(format_migration(report, guild_id))
    return 0


def format_migration(report: V1Migration, guild_id: int) -> str:
    """What ``vivy migrate-v1`` prints."""
    lines = [
        f"migrated {report.migrated} of {report.active_v1} active v1 facts into guild "
        f"{guild_id} ({report.members} members, section 'other')"
    ]
    if report.skipped:
        skipped = ", ".join(f"{reason} {n}" for reason, n in sorted(report.skipped.items()))
        lines.append(f"skipped: {skipped}")
    return "\n".join(lines)
