"""Numbered schema migrations of Vivy's SQLite database.

The schema version is SQLite's ``PRAGMA user_version``. Each migration runs once, in order,
inside one transaction together with the version bump. Discord ids (guilds, channels, users,
messages) are stored as INTEGER snowflakes; ``*_at`` columns are UTC epoch seconds (REAL);
``note_date`` is the UTC date ``YYYY-MM-DD``. ``note_lines`` holds a note's source messages.
A note with evidence (migration 2) keeps them as ``evidence_windows`` (short overlapping runs
of consecutive lines, keyword-indexed in ``evidence_fts``, each with its float32 embedding)
until the retention setting or a member's deletion removes them; a note without windows keeps
its lines only until every profile update of the note is applied (the grounding guard reads
them), so message text does not outlive its use. ``member_names`` holds every display name
and alias a member was seen with in a guild (lower-cased), so a question naming them finds
their notes. The v1 bot's ``facts`` / ``vec_facts`` tables are never created, altered or
dropped here, so an old database keeps them untouched.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlite_vec

from vivy.storage.vectors import (
    EMBEDDING_DIMENSION_DEFAULT,
    binary_dimensions,
)

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "serialize_vector", "vec_notes_ddl"]


def vec_notes_ddl(dimension: int) -> str:
    """DDL of the ``vec_notes`` index: cosine distance, guild as partition key.

    Besides the float vector, each note has a binary-quantised copy of the vector's leading
    :data:`BINARY_PREFIX_DIMENSIONS` dimensions (``embedding_bits``): a KNN over bits (hamming
    distance) finds candidates fast at 100k notes, and the float vectors re-rank them exactly.
    """
    return (
        "CREATE VIRTUAL TABLE vec_notes USING vec0("
        "note_id INTEGER PRIMARY KEY, "
        "guild_id INTEGER PARTITION KEY, "
        "note_kind TEXT, "
        f"embedding float[{int(dimension)}] distance_metric=cosine, "
        f"embedding_bits bit[{binary_dimensions(dimension)}])"
    )


_V1 = f"""
CREATE TABLE IF NOT EXISTS users (
    id          INTEGER PRIMARY KEY,
    discord_id  TEXT UNIQUE NOT NULL,
    username    TEXT NOT NULL
);

CREATE TABLE guild_members (
    guild_id      INTEGER NOT NULL,
    user_id       INTEGER NOT NULL,
    display_name  TEXT NOT NULL,
    opted_out     INTEGER NOT NULL DEFAULT 0 CHECK (opted_out IN (0, 1)),
    updated_at    REAL NOT NULL,
    PRIMARY KEY (guild_id, user_id)
);

CREATE TABLE channel_buffers (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    guild_id         INTEGER NOT NULL,
    channel_id       INTEGER NOT NULL,
    channel_name     TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL CHECK (status IN ('open', 'closed')),
    started_at       REAL NOT NULL,
    last_message_at  REAL NOT NULL,
    inactivity_s     REAL NOT NULL,
    closed_at        REAL,
    close_reason     TEXT CHECK (close_reason IN ('inactivity', 'max_age', 'cap')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  REAL,
    last_error       TEXT
);
CREATE UNIQUE INDEX channel_buffers_one_open ON channel_buffers (channel_id)
    WHERE status = 'open';
CREATE INDEX channel_buffers_outbox ON channel_buffers (status, next_attempt_at);

CREATE TABLE buffer_messages (
    message_id   INTEGER PRIMARY KEY,
    buffer_id    INTEGER NOT NULL REFERENCES channel_buffers (id) ON DELETE CASCADE,
    author_id    INTEGER NOT NULL,
    author_name  TEXT NOT NULL,
    text         TEXT NOT NULL,
    created_at   REAL NOT NULL,
    edited_at    REAL,
    reply_to     INTEGER,
    mentions     TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX buffer_messages_by_buffer ON buffer_messages (buffer_id, message_id);

CREATE TABLE channel_watermarks (
    channel_id       INTEGER PRIMARY KEY,
    last_message_id  INTEGER NOT NULL
);

CREATE TABLE interaction_notes (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    guild_id          INTEGER NOT NULL,
    channel_id        INTEGER NOT NULL,
    channel_name      TEXT NOT NULL DEFAULT '',
    note_type         TEXT NOT NULL CHECK (note_type IN ('conversation', 'topic_cluster')),
    participants      TEXT NOT NULL DEFAULT '[]',
    title             TEXT NOT NULL,
    summary           TEXT NOT NULL,
    topics            TEXT NOT NULL DEFAULT '[]',
    decisions         TEXT NOT NULL DEFAULT '[]',
    open_questions    TEXT NOT NULL DEFAULT '[]',
    entities          TEXT NOT NULL DEFAULT '[]',
    source_note_ids   TEXT,
    buffer_id         INTEGER UNIQUE,
    first_message_id  INTEGER,
    last_message_id   INTEGER,
    message_count     INTEGER NOT NULL DEFAULT 0,
    started_at        REAL,
    ended_at          REAL,
    note_date         TEXT NOT NULL,
    quality           TEXT NOT NULL,
    model             TEXT NOT NULL DEFAULT '',
    created_at        REAL NOT NULL
);
CREATE INDEX interaction_notes_by_day ON interaction_notes (guild_id, note_type, note_date);

CREATE TABLE note_participants (
    note_id        INTEGER NOT NULL REFERENCES interaction_notes (id) ON DELETE CASCADE,
    user_id        INTEGER NOT NULL,
    display_name   TEXT NOT NULL,
    message_count  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (note_id, user_id)
);
CREATE INDEX note_participants_by_user ON note_participants (user_id, note_id);

CREATE TABLE note_lines (
    message_id   INTEGER PRIMARY KEY,
    note_id      INTEGER NOT NULL REFERENCES interaction_notes (id) ON DELETE CASCADE,
    author_id    INTEGER NOT NULL,
    author_name  TEXT NOT NULL,
    text         TEXT NOT NULL,
    created_at   REAL NOT NULL
);
CREATE INDEX note_lines_by_note ON note_lines (note_id, message_id);

CREATE VIRTUAL TABLE notes_fts USING fts5(
    title, summary, topics, entities,
    content='interaction_notes', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER interaction_notes_fts_insert AFTER INSERT ON interaction_notes BEGIN
    INSERT INTO notes_fts (rowid, title, summary, topics, entities)
    VALUES (new.id, new.title, new.summary, new.topics, new.entities);
END;
CREATE TRIGGER interaction_notes_fts_delete AFTER DELETE ON interaction_notes BEGIN
    INSERT INTO notes_fts (notes_fts, rowid, title, summary, topics, entities)
    VALUES ('delete', old.id, old.title, old.summary, old.topics, old.entities);
END;
CREATE TRIGGER interaction_notes_fts_update AFTER UPDATE ON interaction_notes BEGIN
    INSERT INTO notes_fts (notes_fts, rowid, title, summary, topics, entities)
    VALUES ('delete', old.id, old.title, old.summary, old.topics, old.entities);
    INSERT INTO notes_fts (rowid, title, summary, topics, entities)
    VALUES (new.id, new.title, new.summary, new.topics, new.entities);
END;

{vec_notes_ddl(EMBEDDING_DIMENSION_DEFAULT)};

CREATE TABLE user_profiles (
    guild_id    INTEGER NOT NULL,
    user_id     INTEGER NOT NULL,
    version     INTEGER NOT NULL DEFAULT 0,
    updated_at  REAL NOT NULL,
    PRIMARY KEY (guild_id, user_id)
);

CREATE TABLE profile_facts (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT,
    guild_id             INTEGER NOT NULL,
    user_id              INTEGER NOT NULL,
    section              TEXT NOT NULL CHECK (section IN
                             ('bio', 'interests', 'skills', 'opinions', 'relationships', 'other')),
    text                 TEXT NOT NULL,
    source_kind          TEXT NOT NULL CHECK (source_kind IN
                             ('note', 'stated', 'consolidation', 'migrated')),
    source_note_id       INTEGER REFERENCES interaction_notes (id) ON DELETE SET NULL,
    source_label         TEXT NOT NULL,
    created_at           REAL NOT NULL,
    invalidated_at       REAL,
    invalidation_reason  TEXT,
    superseded_by        INTEGER REFERENCES profile_facts (id)
);
CREATE INDEX profile_facts_by_user ON profile_facts (guild_id, user_id, invalidated_at);

CREATE TABLE profile_updates (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    guild_id         INTEGER NOT NULL,
    user_id          INTEGER NOT NULL,
    note_id          INTEGER NOT NULL REFERENCES interaction_notes (id) ON DELETE CASCADE,
    status           TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'applied')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  REAL,
    last_error       TEXT,
    created_at       REAL NOT NULL,
    applied_at       REAL,
    UNIQUE (note_id, user_id)
);
CREATE INDEX profile_updates_pending ON profile_updates (status, user_id);

CREATE TABLE server_lore (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    guild_id        INTEGER NOT NULL,
    text            TEXT NOT NULL,
    author_id       INTEGER NOT NULL,
    created_at      REAL NOT NULL,
    invalidated_at  REAL
);
CREATE INDEX server_lore_by_guild ON server_lore (guild_id, invalidated_at);

CREATE TABLE memory_job_log (
    guild_id      INTEGER NOT NULL,
    job_date      TEXT NOT NULL,
    pass          TEXT NOT NULL CHECK (pass IN ('clusters', 'consolidation')),
    completed_at  REAL NOT NULL,
    PRIMARY KEY (guild_id, job_date, pass)
);

CREATE TABLE scheduler_runs (
    job_date      TEXT PRIMARY KEY,
    completed_at  REAL NOT NULL
);

CREATE TABLE meta (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);
"""

#: Version 2: notes keep their messages as evidence windows (keyword-indexed, embedded),
#: members' known names are recorded, and a profile update may carry the operations its note
#: call already returned (``operations``, a JSON ``ProfileOperations``) and the profile version
#: they were computed against (``basis_version``); such an update is applied without a model
#: call when the profile is still at that version. NULL ``operations``: it needs its own call.
_V2 = """
CREATE TABLE evidence_windows (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    note_id           INTEGER NOT NULL REFERENCES interaction_notes (id) ON DELETE CASCADE,
    guild_id          INTEGER NOT NULL,
    first_message_id  INTEGER NOT NULL,
    last_message_id   INTEGER NOT NULL,
    text              TEXT NOT NULL,
    embedding         BLOB
);
CREATE INDEX evidence_windows_by_note ON evidence_windows (note_id, first_message_id);
CREATE INDEX note_lines_by_author ON note_lines (author_id);

CREATE TABLE member_names (
    guild_id  INTEGER NOT NULL,
    user_id   INTEGER NOT NULL,
    name      TEXT NOT NULL,
    PRIMARY KEY (guild_id, name, user_id)
);
INSERT OR IGNORE INTO member_names (guild_id, user_id, name)
    SELECT DISTINCT n.guild_id, p.user_id, lower(p.display_name)
    FROM note_participants AS p JOIN interaction_notes AS n ON n.id = p.note_id;
INSERT OR IGNORE INTO member_names (guild_id, user_id, name)
    SELECT guild_id, user_id, lower(display_name) FROM guild_members;

CREATE VIRTUAL TABLE evidence_fts USING fts5(
    text, content='evidence_windows', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER evidence_windows_fts_insert AFTER INSERT ON evidence_windows BEGIN
    INSERT INTO evidence_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER evidence_windows_fts_delete AFTER DELETE ON evidence_windows BEGIN
    INSERT INTO evidence_fts (evidence_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER evidence_windows_fts_update AFTER UPDATE OF text ON evidence_windows BEGIN
    INSERT INTO evidence_fts (evidence_fts, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO evidence_fts (rowid, text) VALUES (new.id, new.text);
END;

ALTER TABLE profile_updates ADD COLUMN operations TEXT;
ALTER TABLE profile_updates ADD COLUMN basis_version INTEGER;
"""

#: Version 3: a guild's vector generation, bumped in the transaction that removes or replaces
#: any of its note vectors, so that an in-memory copy of its binary vectors
#: (:mod:`vivy.storage.vector_index`) knows to load them again (no row: generation 0);
#: profile updates indexed by note, so applying one looks only at its note's other updates;
#: and ``vec_notes`` becomes a plain table: its nearest-neighbour search runs in memory, and a
#: plain row gives a note's float vector in one page read where sqlite-vec's chunked storage
#: read it out of a whole chunk (the bits come first, so loading them reads no float vector).
_V3 = """
CREATE TABLE vector_generations (
    guild_id    INTEGER PRIMARY KEY,
    generation  INTEGER NOT NULL
);
CREATE INDEX profile_updates_by_note ON profile_updates (note_id, status);

CREATE TABLE vec_notes_rows (
    note_id         INTEGER PRIMARY KEY,
    guild_id        INTEGER NOT NULL,
    note_kind       TEXT NOT NULL,
    embedding_bits  BLOB NOT NULL,
    embedding       BLOB NOT NULL
);
INSERT INTO vec_notes_rows (note_id, guild_id, note_kind, embedding_bits, embedding)
    SELECT note_id, guild_id, note_kind, embedding_bits, embedding FROM vec_notes;
DROP TABLE vec_notes;
ALTER TABLE vec_notes_rows RENAME TO vec_notes;
CREATE INDEX vec_notes_by_guild ON vec_notes (guild_id, note_id);
"""

#: Version 4: a nightly run is recorded per shard scope. A process that owns every shard
#: records ``(1, 0)``; the processes of a PostgreSQL fleet, each owning some shards of
#: ``shard_count``, record one row per shard they own, so a day one process completed is not
#: taken as done for the guilds of another (SQLite always runs every shard).
_V4 = """
CREATE TABLE scheduler_runs_v4 (
    job_date      TEXT NOT NULL,
    shard_count   INTEGER NOT NULL DEFAULT 1,
    shard_id      INTEGER NOT NULL DEFAULT 0,
    completed_at  REAL NOT NULL,
    PRIMARY KEY (job_date, shard_count, shard_id)
);
INSERT INTO scheduler_runs_v4 (job_date, completed_at)
    SELECT job_date, completed_at FROM scheduler_runs;
DROP TABLE scheduler_runs;
ALTER TABLE scheduler_runs_v4 RENAME TO scheduler_runs;
"""

#: Version 5: PostgreSQL's keyword postings (:mod:`vivy.storage.postgres.schema`). SQLite's
#: FTS5 tables keep their own postings already, so nothing changes here; the version is
#: taken so that both engines keep stepping through the same numbers.
_V5 = ""

#: Version 6: the memory page's corrections log: who removed what, and when.
_V6 = """
CREATE TABLE memory_corrections (
    id        INTEGER PRIMARY KEY,
    guild_id  INTEGER NOT NULL,
    done_at   REAL NOT NULL,
    actor     TEXT NOT NULL,
    action    TEXT NOT NULL CHECK (action IN ('remove_fact', 'remove_note', 'forget_member')),
    target    TEXT NOT NULL
);
CREATE INDEX memory_corrections_by_guild ON memory_corrections (guild_id, done_at);
"""

#: Version 7 changes PostgreSQL's note-vector index only; SQLite's schema is unchanged (the
#: two engines keep one version number).
_V7 = ""

#: Version 8: PostgreSQL's note vectors are searched through in-memory copies, as SQLite's
#: already are (:mod:`vivy.storage.postgres.schema`); SQLite's schema is unchanged.
_V8 = ""

#: Version 9: guilds' names (from their exports), shown beside their ids.
_V9 = """
CREATE TABLE guild_names (
    guild_id    INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    updated_at  REAL NOT NULL
);
"""

#: Version 10: a correction names the member it concerns (``user_id``) and quotes what it
#: removed (``quote``): both are cleared when that member is forgotten.
_V10 = """
ALTER TABLE memory_corrections ADD COLUMN user_id INTEGER;
ALTER TABLE memory_corrections ADD COLUMN quote TEXT;
"""

#: Migration scripts; migration ``n`` (1-based) brings the schema from version n-1 to n.
MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8, _V9, _V10)

#: The newest schema version this Vivy knows.
SCHEMA_VERSION = len(MIGRATIONS)


def serialize_vector(vector: Sequence[float]) -> bytes:
    """The float32 blob sqlite-vec stores."""
    return bytes(sqlite_vec.serialize_float32(list(vector)))
