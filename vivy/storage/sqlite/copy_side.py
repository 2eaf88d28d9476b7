"""SQLite's side of ``vivy db copy``: a file read through a read-only connection, or written
as a target, in the copy's neutral row form (:class:`~vivy.storage.copy_plan.CopySide`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import sqlean

from vivy.errors import StorageError
from vivy.storage.copy_plan import (
    PROGRESS_KEY,
    ROWID_COLUMNS,
    SQLITE_DERIVED,
    CopiedTable,
    keyset,
    quoted,
    update_by_key,
)
from vivy.storage.dialect import REEMBED_STAGING
from vivy.storage.sqlite import checks
from vivy.storage.sqlite.db import Connection
from vivy.storage.sqlite.db import connect as sqlite_connect
from vivy.storage.sqlite.db import migrate as sqlite_migrate
from vivy.storage.sqlite.writer_lock import hold_writer_lock
from vivy.storage.vectors import binary_dimensions

__all__ = ["SqliteCopySide"]


class SqliteCopySide:
    """A SQLite file: read through a read-only connection, or written as a target."""

    def __init__(self, path: Path, conn: Connection | None) -> None:
        self.shown = str(path)
        self._path = path
        self._conn = conn
        self._writable = False
        self._release: Callable[[], None] | None = None

    @classmethod
    def open(cls, path: Path, *, read_only: bool) -> SqliteCopySide:
        """A source must exist; a target is looked at read-only (if it exists) until the
        first write, which creates it if needed."""
        if read_only or path.exists():
            return cls(path, checks.open_readonly(path))
        if not path.parent.is_dir():
            raise StorageError(f"no such directory: {path.parent}")
        return cls(path, None)

    @property
    def _db(self) -> Connection:
        """The connection to read with."""
        if self._conn is None:
            return self._writer()
        return self._conn

    def _writer(self) -> Connection:
        """The connection to write with, opened (and the file created) on first use."""
        if not self._writable:
            self._release = hold_writer_lock(self._path)
            if self._conn is not None:
                self._conn.close()
            self._conn = None
            self._conn = sqlite_connect(self._path)
            self._writable = True
        assert self._conn is not None
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._release is not None:
            self._release()
            self._release = None

    def schema_version(self) -> int:
        return 0 if self._conn is None else checks.schema_version(self._conn)

    def has_table(self, name: str) -> bool:
        return self.columns(name) is not None

    def columns(self, name: str) -> list[str] | None:
        if self._conn is None:
            return None
        found = [str(r[1]) for r in self._conn.execute(f"PRAGMA table_info({quoted(name)})")]
        if not found:
            return None
        derived = SQLITE_DERIVED.get(name, frozenset())
        rowid = [ROWID_COLUMNS[name]] if name in ROWID_COLUMNS else []
        return rowid + [column for column in found if column not in derived]

    def count(self, name: str) -> int:
        if self._conn is None:
            return 0
        return int(self._conn.execute(f"SELECT COUNT(*) FROM {quoted(name)}").fetchone()[0])

    def meta(self, key: str) -> str | None:
        if self._conn is None:
            return None
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def vector_dimension(self) -> int | None:
        return None if self._conn is None else checks.vec_notes_dimension(self._conn)

    def high_water(self, name: str) -> int | None:
        if self._conn is None:
            return None
        row = self._conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (name,))
        found = row.fetchone()
        return None if found is None else int(found[0])

    def _column(self, table: str, column: str) -> str:
        """The SQL naming ``column``: SQLite's rowid where PostgreSQL has a column for it."""
        return "rowid" if ROWID_COLUMNS.get(table) == column else quoted(column)

    def read(
        self, table: CopiedTable, columns: list[str], after: Sequence[Any] | None, limit: int
    ) -> list[tuple[Any, ...]]:
        keys = [self._column(table.name, key) for key in table.key]
        query = (
            f"SELECT {', '.join(self._column(table.name, c) for c in columns)}"
            f" FROM {quoted(table.name)}"
            + keyset(keys, ["?"] * len(keys), after)
            + f" ORDER BY {', '.join(keys)} LIMIT ?"
        )
        try:
            rows = self._db.execute(query, [*(after or ()), limit]).fetchall()
        except sqlean.Error as exc:
            raise StorageError(f"reading {table.name} from {self.shown}: {exc}") from exc
        return [tuple(row) for row in rows]

    def migrate(self) -> None:
        sqlite_migrate(self._writer())

    def _transaction(self, work: Callable[[Connection], None]) -> None:
        conn = self._writer()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                work(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlean.Error as exc:
            raise StorageError(f"writing {self.shown}: {exc}") from exc

    def clear(self, names: Sequence[str]) -> None:
        def work(conn: Connection) -> None:
            for name in names:
                conn.execute(f"DELETE FROM {quoted(name)}")
            conn.execute("DELETE FROM sqlite_sequence")
            conn.execute(f"DROP TABLE IF EXISTS {REEMBED_STAGING}")

        self._transaction(work)

    def fit_vectors(self, dimension: int) -> None:
        """Nothing to do: SQLite's vectors are blobs of any length."""

    def write(
        self, table: CopiedTable, columns: list[str], rows: Sequence[tuple[Any, ...]], progress: str
    ) -> None:
        names = [self._column(table.name, c) for c in columns]
        marks = ["?"] * len(columns)
        deferred = {columns.index(c) for c in table.deferred}
        bits = table.name in SQLITE_DERIVED
        if bits:
            names.append("embedding_bits")
            marks.append("vec_quantize_binary(vec_slice(?, 0, ?))")
            vector = columns.index("embedding")
        values = []
        for row in rows:
            value = [None if i in deferred else v for i, v in enumerate(row)]
            if bits:
                blob = row[vector]
                value += [blob, binary_dimensions(len(blob) // 4)]
            values.append(value)
        insert = (
            f"INSERT INTO {quoted(table.name)} ({', '.join(names)}) VALUES ({', '.join(marks)})"
        )

        def work(conn: Connection) -> None:
            conn.executemany(insert, values)
            _set_sqlite_progress(conn, progress)

        self._transaction(work)

    def update(self, table: CopiedTable, rows: Sequence[tuple[Any, ...]], progress: str) -> None:
        update, values = update_by_key(
            table, rows, lambda key: self._column(table.name, key), mark="?"
        )

        def work(conn: Connection) -> None:
            conn.executemany(update, values)
            _set_sqlite_progress(conn, progress)

        self._transaction(work)

    def finish(self, high_waters: dict[str, int | None], progress: str) -> None:
        def work(conn: Connection) -> None:
            for name, seq in high_waters.items():
                if seq is None:
                    continue
                conn.execute(
                    "UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = ?", (seq, name)
                )
                conn.execute(
                    "INSERT INTO sqlite_sequence (name, seq) SELECT ?, ?"
                    " WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?)"
                    " AND EXISTS (SELECT 1 FROM sqlite_master WHERE name = ?"
                    " AND sql LIKE '%AUTOINCREMENT%')",
                    (name, seq, name, name),
                )
            _set_sqlite_progress(conn, progress)

        self._transaction(work)

    def forget_progress(self) -> None:
        def work(conn: Connection) -> None:
            conn.execute("DELETE FROM meta WHERE key = ?", (PROGRESS_KEY,))

        self._transaction(work)


def _set_sqlite_progress(conn: Connection, progress: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (PROGRESS_KEY, progress),
    )
