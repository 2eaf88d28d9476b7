"""SQL of the operator commands: import bookkeeping, inspection, checks, backup, v1 migration
and re-embedding.

Read-only commands open the file with :func:`open_readonly`, which refuses a missing file
instead of creating an empty database and never migrates or switches the journal mode. Every
function here is a plain synchronous function taking the connection first, like the rest of
:mod:`vivy.storage`; the ones that write are meant for :meth:`Database.write_sync` (one
transaction each).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import sqlean
import sqlite_vec

from vivy.clock import parse_utc
from vivy.errors import SchemaTooNew, StorageError
from vivy.llm.schemas import PROFILE_SECTIONS
from vivy.state.guards import content_tokens
from vivy.state.profile import PROFILE_CAP, SECTION_CAP, check_fact_text
from vivy.storage.db import BUSY_TIMEOUT_MS, Connection
from vivy.storage.notes import Note, get_notes, serialize_vector
from vivy.storage.schema import SCHEMA_VERSION, VEC_KINDS, binary_dimensions, vec_notes_ddl
from vivy.storage.vector_index import vectors_replaced

__all__ = [
    "REEMBED_STAGING",
    "FactRecord",
    "NoteText",
    "OutboxState",
    "V1Migration",
    "begin_staging",
    "check_foreign_keys",
    "check_integrity",
    "count_rows",
    "list_notes",
    "member_name",
    "migrate_v1_facts",
    "migrated_label",
    "note_counts",
    "notes_to_embed",
    "open_readonly",
    "outbox_state",
    "profile_records",
    "require_vivy_schema",
    "schema_version",
    "stage_vectors",
    "swap_note_vectors",
    "vec_notes_dimension",
    "watermarks",
]

#: Work table of ``vivy reembed``: new vectors wait here until all notes have one.
REEMBED_STAGING = "reembed_staging"


# --- opening --------------------------------------------------------------------------------


def open_readonly(path: str | Path) -> Connection:
    """Open an existing database for reading only, with sqlite-vec loaded.

    Raises :class:`StorageError` when the file does not exist or is not a SQLite database; a
    missing file is never created. The connection is opened ``mode=rw`` with
    ``query_only`` (so closing it checkpoints and removes the WAL files as usual), or
    ``mode=ro`` when the file cannot be written.
    """
    file = Path(path)
    if not file.exists():
        raise StorageError(f"no such database file: {file}")
    if not file.is_file():
        raise StorageError(f"not a database file: {file}")
    uri = file.resolve().as_uri()
    try:
        try:
            conn = _connect_uri(f"{uri}?mode=rw")
        except sqlean.OperationalError:
            conn = _connect_uri(f"{uri}?mode=ro")
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except sqlean.Error as exc:
        raise StorageError(f"cannot open database {file}: {exc}") from exc
    return conn


def _connect_uri(uri: str) -> Connection:
    conn: Connection = sqlean.connect(uri, uri=True, isolation_level=None)
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        conn.row_factory = sqlean.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA query_only = ON")
    except BaseException:
        conn.close()
        raise
    return conn


def schema_version(conn: Connection) -> int:
    """The schema version (``PRAGMA user_version``)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def require_vivy_schema(conn: Connection, path: str | Path) -> None:
    """Refuse a file that is not a Vivy database of the version this Vivy reads."""
    version = schema_version(conn)
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(version, SCHEMA_VERSION)
    if version == 0:
        raise StorageError(f"{path} is not a Vivy database (schema version 0)")
    if version < SCHEMA_VERSION:
        raise StorageError(
            f"{path} has schema version {version}, older than this Vivy's {SCHEMA_VERSION};"
            " start Vivy once (or run `vivy import`) to migrate it"
        )


# --- checks ---------------------------------------------------------------------------------


def check_integrity(conn: Connection) -> list[str]:
    """Problems reported by ``PRAGMA integrity_check`` (empty when it says ``ok``)."""
    rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check").fetchall()]
    return [] if rows == ["ok"] else rows


def check_foreign_keys(conn: Connection) -> list[str]:
    """Rows violating a foreign key, as ``table rowid -> parent``."""
    return [
        f"{r[0]} row {r[1]} references a missing {r[2]} row"
        for r in conn.execute("PRAGMA foreign_key_check").fetchall()
    ]


def count_rows(conn: Connection, table: str) -> int:
    """Rows in ``table`` (a name from the schema, never user input)."""
    return int(conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0])


_DIMENSION = re.compile(r"embedding\s+float\[(\d+)\]", re.IGNORECASE)


def vec_notes_dimension(conn: Connection) -> int | None:
    """The vector length ``vec_notes`` was created with, or None when it is missing."""
    row = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'vec_notes'"
    ).fetchone()
    if row is None or row[0] is None:
        return None
    found = _DIMENSION.search(str(row[0]))
    return int(found.group(1)) if found else None


# --- import bookkeeping ---------------------------------------------------------------------


def _per_channel(conn: Connection, sql: str, channel_ids: Iterable[int]) -> dict[int, int]:
    """``channel id -> value`` rows of ``sql`` (``{marks}`` stands for the ids' placeholders),
    run over the ids 500 at a time (SQLite's variable limit)."""
    ids = sorted(set(channel_ids))
    found: dict[int, int] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        query = sql.format(marks=",".join("?" * len(chunk)))
        for channel_id, value in conn.execute(query, chunk).fetchall():
            found[int(channel_id)] = int(value)
    return found


def watermarks(conn: Connection, channel_ids: Iterable[int]) -> dict[int, int]:
    """Closed-buffer watermarks of the given channels (channels without one are left out)."""
    return _per_channel(
        conn,
        "SELECT channel_id, last_message_id FROM channel_watermarks WHERE channel_id IN ({marks})",
        channel_ids,
    )


@dataclass(frozen=True, slots=True)
class OutboxState:
    """Unfinished pipeline work: open buffers, closed buffers and pending profile updates.

    The closed buffers and pending updates map their id to the attempts made so far, so a
    caller can tell work that keeps failing from work that has not been tried yet.
    """

    open_buffers: int
    closed_buffers: dict[int, int]
    pending_updates: dict[int, int]

    @property
    def empty(self) -> bool:
        """Whether nothing is left to do."""
        return not (self.open_buffers or self.closed_buffers or self.pending_updates)


def buffered_high_marks(conn: Connection, channel_ids: Iterable[int]) -> dict[int, int]:
    """The highest message id held in an open buffer of each given channel that has one."""
    return _per_channel(
        conn,
        "SELECT b.channel_id, MAX(m.message_id) FROM buffer_messages m"
        " JOIN channel_buffers b ON b.id = m.buffer_id"
        " WHERE b.status = 'open' AND b.channel_id IN ({marks}) GROUP BY b.channel_id",
        channel_ids,
    )


def outbox_state(conn: Connection) -> OutboxState:
    """The pipeline's unfinished work."""
    open_count = conn.execute(
        "SELECT COUNT(*) FROM channel_buffers WHERE status = 'open'"
    ).fetchone()[0]
    closed = {
        int(r[0]): int(r[1])
        for r in conn.execute("SELECT id, attempts FROM channel_buffers WHERE status = 'closed'")
    }
    pending = {
        int(r[0]): int(r[1])
        for r in conn.execute("SELECT id, attempts FROM profile_updates WHERE status = 'pending'")
    }
    return OutboxState(int(open_count), closed, pending)


def note_counts(conn: Connection) -> Counter[str]:
    """Stored notes by type."""
    return Counter(
        {
            str(r[0]): int(r[1])
            for r in conn.execute(
                "SELECT note_type, COUNT(*) FROM interaction_notes GROUP BY note_type"
            )
        }
    )


# --- inspection -----------------------------------------------------------------------------


def member_name(conn: Connection, guild_id: int, user_id: int) -> str | None:
    """The member's display name in the guild, if Vivy has seen them."""
    row = conn.execute(
        "SELECT display_name FROM guild_members WHERE guild_id = ? AND user_id = ?",
        (guild_id, user_id),
    ).fetchone()
    return None if row is None else str(row[0])


@dataclass(frozen=True, slots=True)
class FactRecord:
    """A profile fact with its history, as ``vivy profile`` shows it."""

    id: int
    section: str
    text: str
    source_kind: str
    source_label: str
    created_at: float
    invalidated_at: float | None
    invalidation_reason: str | None
    superseded_by: int | None
    superseded_text: str | None


def profile_records(
    conn: Connection, guild_id: int, user_id: int, *, include_invalidated: bool
) -> list[FactRecord]:
    """The member's facts in section order, oldest first; invalidated ones only on request."""
    query = (
        "SELECT f.id, f.section, f.text, f.source_kind, f.source_label, f.created_at,"
        " f.invalidated_at, f.invalidation_reason, f.superseded_by, s.text"
        " FROM profile_facts f LEFT JOIN profile_facts s ON s.id = f.superseded_by"
        " WHERE f.guild_id = ? AND f.user_id = ?"
    )
    if not include_invalidated:
        query += " AND f.invalidated_at IS NULL"
    rows = conn.execute(query + " ORDER BY f.created_at, f.id", (guild_id, user_id)).fetchall()
    order: dict[str, int] = {section: i for i, section in enumerate(PROFILE_SECTIONS)}
    records = [FactRecord(*tuple(r)) for r in rows]
    return sorted(records, key=lambda f: order.get(f.section, len(order)))


def list_notes(
    conn: Connection,
    guild_id: int,
    *,
    since: str | None = None,
    note_type: str | None = None,
    limit: int = 20,
) -> list[Note]:
    """A guild's newest notes (on or after the UTC date ``since``), newest first."""
    query = "SELECT id FROM interaction_notes WHERE guild_id = ?"
    args: list[object] = [guild_id]
    if since is not None:
        query += " AND note_date >= ?"
        args.append(since)
    if note_type is not None:
        query += " AND note_type = ?"
        args.append(note_type)
    query += " ORDER BY note_date DESC, COALESCE(started_at, created_at) DESC, id DESC LIMIT ?"
    args.append(limit)
    ids = [int(r[0]) for r in conn.execute(query, args).fetchall()]
    return get_notes(conn, ids)


# --- seed 000 migration ---------------------------------------------------------------------


@dataclass(slots=True)
class V1Migration:
    """What ``vivy migrate-v1`` did: facts migrated, and facts skipped by reason."""

    migrated: int = 0
    members: int = 0
    active_v1: int = 0
    skipped: Counter[str] = field(default_factory=Counter)


def _v1_tables_present(conn: Connection, schema: str) -> bool:
    found = {
        str(r[0])
        for r in conn.execute(
            f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table'"
            " AND name IN ('facts', 'users')"
        )
    }
    return found == {"facts", "users"}


_REFUSED = {"instruction": "instruction-like", "too_long": "too long"}


def migrated_label(fact_id: int) -> str:
    """How a migrated fact cites its origin."""
    return f"migrated from v1 fact #{fact_id}"


def migrate_v1_facts(
    conn: Connection,
    guild_id: int,
    now: float,
    *,
    schema: str = "main",
    blacklisted_users: frozenset[int] = frozenset(),
) -> V1Migration:
    """Copy seed 000's active facts into ``guild_id``'s profiles, section ``other``.

    Runs in the caller's transaction. A fact is skipped (and counted by reason) when it was
    migrated before (its ``source_label`` names its v1 id), fails the fact guards, repeats an
    active fact, belongs to a member who opted out or is blacklisted, or would overflow the
    section or profile cap (newest v1 facts are kept first). ``facts`` and ``vec_facts`` are
    only read. ``schema`` names an attached v1 database (``main`` when it is the same file).
    """
    if not _v1_tables_present(conn, schema):
        raise StorageError("no seed-000 `facts` and `users` tables found in the v1 database")
    report = V1Migration()
    rows = conn.execute(
        f"SELECT f.id, u.discord_id, u.username, f.fact_text, f.created_at"
        f" FROM {schema}.facts f JOIN {schema}.users u ON u.id = f.user_id"
        f" WHERE f.is_active = 1 ORDER BY f.created_at DESC, f.id DESC"
    ).fetchall()
    report.active_v1 = len(rows)
    opted_out = {
        int(r[0])
        for r in conn.execute(
            "SELECT user_id FROM guild_members WHERE guild_id = ? AND opted_out = 1", (guild_id,)
        )
    }
    done = {
        str(r[0])
        for r in conn.execute(
            "SELECT source_label FROM profile_facts"
            " WHERE guild_id = ? AND source_kind = 'migrated'",
            (guild_id,),
        )
    }
    by_user: dict[int, list[tuple[int, str, str, float]]] = {}
    for fact_id, discord_id, username, text, created in rows:
        label = migrated_label(int(fact_id))
        if label in done:
            report.skipped["already migrated"] += 1
            continue
        try:
            user_id = int(str(discord_id).strip())
        except ValueError:
            report.skipped["bad discord id"] += 1
            continue
        if user_id in opted_out or user_id in blacklisted_users:
            report.skipped["opted out or blacklisted"] += 1
            continue
        fact_text = " ".join(str(text).split())
        refused = check_fact_text(fact_text) if fact_text else None
        if not fact_text:
            report.skipped["empty"] += 1
            continue
        if refused is not None:
            report.skipped[_REFUSED.get(refused.value, refused.value)] += 1
            continue
        by_user.setdefault(user_id, []).append(
            (int(fact_id), str(username), fact_text, _v1_time(created, now))
        )
    for user_id, facts in by_user.items():
        added = _migrate_member(conn, guild_id, user_id, facts, now, report)
        if added:
            report.members += 1
            report.migrated += added
    return report


def _v1_time(value: object, fallback: float) -> float:
    """Seed 000's ``CURRENT_TIMESTAMP`` text (UTC) as epoch seconds."""
    try:
        return parse_utc(str(value).strip().replace(" ", "T", 1))
    except ValueError:
        return fallback


def _migrate_member(
    conn: Connection,
    guild_id: int,
    user_id: int,
    facts: list[tuple[int, str, str, float]],
    now: float,
    report: V1Migration,
) -> int:
    """Insert one member's facts (newest first) within the caps; returns how many."""
    active = conn.execute(
        "SELECT section, text FROM profile_facts"
        " WHERE guild_id = ? AND user_id = ? AND invalidated_at IS NULL",
        (guild_id, user_id),
    ).fetchall()
    seen = {frozenset(content_tokens(str(r[1]))) for r in active}
    in_other = sum(1 for r in active if r[0] == "other")
    total = len(active)
    added = 0
    for fact_id, _, text, created in facts:
        key = frozenset(content_tokens(text))
        if key in seen:
            report.skipped["duplicate"] += 1
            continue
        if in_other >= SECTION_CAP or total >= PROFILE_CAP:
            report.skipped["over the profile caps"] += 1
            continue
        conn.execute(
            "INSERT INTO profile_facts (guild_id, user_id, section, text, source_kind,"
            " source_note_id, source_label, created_at) VALUES (?, ?, 'other', ?, 'migrated',"
            " NULL, ?, ?)",
            (guild_id, user_id, text, migrated_label(fact_id), created),
        )
        seen.add(key)
        in_other += 1
        total += 1
        added += 1
    if added:
        conn.execute(
            "INSERT INTO guild_members (guild_id, user_id, display_name, updated_at)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (guild_id, user_id) DO NOTHING",
            (guild_id, user_id, facts[0][1], now),
        )
        conn.execute(
            "INSERT INTO user_profiles (guild_id, user_id, version, updated_at)"
            " VALUES (?, ?, 1, ?) ON CONFLICT (guild_id, user_id) DO UPDATE SET"
            " version = version + 1, updated_at = excluded.updated_at",
            (guild_id, user_id, now),
        )
    return added


# --- re-embedding ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NoteText:
    """What a note's embedding text is computed from."""

    id: int
    note_type: str
    channel_name: str
    note_date: str
    participants: tuple[str, ...]
    topics: tuple[str, ...]
    title: str
    summary: str


def begin_staging(conn: Connection, model_key: str) -> int:
    """Start or resume staging vectors of ``model_key``; returns how many are staged already.

    Vectors staged by an unfinished run with another model are thrown away.
    """
    stored = conn.execute("SELECT value FROM meta WHERE key = 'reembed_model'").fetchone()
    if stored is None or str(stored[0]) != model_key:
        conn.execute(f"DROP TABLE IF EXISTS {REEMBED_STAGING}")
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('reembed_model', ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (model_key,),
        )
    _ensure_staging(conn)
    return count_rows(conn, REEMBED_STAGING)


def _ensure_staging(conn: Connection) -> None:
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {REEMBED_STAGING} ("
        " note_id INTEGER PRIMARY KEY, embedding BLOB NOT NULL)"
    )


def notes_to_embed(conn: Connection, limit: int) -> list[NoteText]:
    """Up to ``limit`` notes without a staged vector, oldest first (after :func:`begin_staging`)."""
    rows = conn.execute(
        "SELECT n.id, n.note_type, n.channel_name, n.note_date, n.topics, n.title, n.summary"
        f" FROM interaction_notes n LEFT JOIN {REEMBED_STAGING} s ON s.note_id = n.id"
        " WHERE s.note_id IS NULL ORDER BY n.id LIMIT ?",
        (limit,),
    ).fetchall()
    ids = [int(r[0]) for r in rows]
    names: dict[int, list[str]] = {i: [] for i in ids}
    if ids:
        marks = ",".join("?" * len(ids))
        # Insertion order is the order the NoteWriter listed the participants in.
        for note_id, name in conn.execute(
            f"SELECT note_id, display_name FROM note_participants WHERE note_id IN ({marks})"
            " ORDER BY note_id, rowid",
            ids,
        ):
            names[int(note_id)].append(str(name))
    return [
        NoteText(
            id=int(r[0]),
            note_type=str(r[1]),
            channel_name=str(r[2]),
            note_date=str(r[3]),
            participants=tuple(names[int(r[0])]),
            topics=tuple(json.loads(str(r[4]))),
            title=str(r[5]),
            summary=str(r[6]),
        )
        for r in rows
    ]


def stage_vectors(conn: Connection, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
    """Keep new vectors until every note has one."""
    _ensure_staging(conn)
    conn.executemany(
        f"INSERT OR REPLACE INTO {REEMBED_STAGING} (note_id, embedding) VALUES (?, ?)",
        [(note_id, serialize_vector(vector)) for note_id, vector in vectors],
    )


def swap_note_vectors(conn: Connection, model: str, dimension: int) -> int | None:
    """Replace every note vector with its staged one and record the model, atomically.

    Returns the number of vectors written, or None (changing nothing) when a note still has
    no staged vector. When the dimension differs, ``vec_notes`` is dropped and recreated.
    """
    missing = conn.execute(
        f"SELECT COUNT(*) FROM interaction_notes n LEFT JOIN {REEMBED_STAGING} s"
        " ON s.note_id = n.id WHERE s.note_id IS NULL"
    ).fetchone()[0]
    if missing:
        return None
    vectors_replaced(conn)
    if vec_notes_dimension(conn) == dimension:
        conn.execute("DELETE FROM vec_notes")
    else:
        conn.execute("DROP TABLE IF EXISTS vec_notes")
        conn.execute(vec_notes_ddl(dimension))
    conn.execute(
        "INSERT INTO vec_notes (note_id, guild_id, note_kind, embedding, embedding_bits)"
        " SELECT n.id, n.guild_id, CASE n.note_type WHEN 'topic_cluster' THEN ? ELSE ? END,"
        " s.embedding, vec_quantize_binary(vec_slice(s.embedding, 0, ?))"
        f" FROM interaction_notes n JOIN {REEMBED_STAGING} s ON s.note_id = n.id ORDER BY n.id",
        (VEC_KINDS["topic_cluster"], VEC_KINDS["conversation"], binary_dimensions(dimension)),
    )
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('embedding_model', ?), ('embedding_dimension', ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (model, str(dimension)),
    )
    conn.execute("DELETE FROM meta WHERE key = 'reembed_model'")
    conn.execute(f"DROP TABLE {REEMBED_STAGING}")
    # Evidence windows embedded by the old model must not be compared with the new one's
    # questions; ``vivy reembed`` embeds them again right after (windows_to_embed).
    conn.execute("UPDATE evidence_windows SET embedding = NULL")
    return count_rows(conn, "vec_notes")
