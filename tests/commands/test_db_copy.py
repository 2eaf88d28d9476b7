"""``vivy db copy`` between SQLite and PostgreSQL, and ``vivy db check`` on PostgreSQL.

The source is a SQLite database with real content: two fixture exports imported through the
pipeline (notes with vectors, evidence windows, profiles with facts, clusters, the job log),
then, through the store port, an open buffer with messages, a closed buffer waiting for its
note, a note whose profile updates are pending, a merged fact (``superseded_by``), a fact a
member stated and server lore. Copies run on the session's embedded PostgreSQL, each test in
a schema of its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
import sqlean
from psycopg.conninfo import conninfo_to_dict

import vivy.commands.db
from tests.hashing import hash_embedding
from tests.importer import ANA, BEN, GUILD, LOUNGE, THREAD_LATER, TWO_DAYS, import_files
from tests.pg import embedded_postgres, pg_url
from vivy.cli import EXIT_INTERRUPTED, EXIT_RUNTIME, EXIT_USAGE
from vivy.errors import StorageError
from vivy.memory.buffers import BufferedMessage, CloseReason
from vivy.memory.facts import NewFact, RetiredFact
from vivy.memory.notes import NewNote, Participant, PlannedUpdate
from vivy.memory.scales import SimilarityScale, scale_key
from vivy.state.profile import ProfilePlan
from vivy.storage.copy import (
    COPIED_TABLES,
    NOT_COPIED,
    PROGRESS_KEY,
    CopyReport,
    copy_database,
)
from vivy.storage.port import ReadOnlyStore
from vivy.storage.postgres.db import PgDatabase
from vivy.storage.postgres.stores import open_postgres_store
from vivy.storage.search_types import NoteSearch, NoteSearchResult
from vivy.storage.sqlite.checks import open_readonly
from vivy.storage.sqlite.db import Database
from vivy.storage.sqlite.stores import open_sqlite_store, sqlite_store
from vivy.text.terms import query_terms

from . import run_cli

pytestmark = pytest.mark.skipif(
    embedded_postgres is None, reason="embedded_postgres is not installed"
)

ROOT = Path(__file__).resolve().parents[2]

#: A channel with an open buffer, and one with a closed buffer waiting for its note.
OPEN_CHANNEL = 910000000000000101
OUTBOX_CHANNEL = 910000000000000102


#: The guild's similarity scale the source holds.
SCALE_KEY = scale_key(GUILD, "hash-768", 768)
SCALE = SimilarityScale(0.21, 0.52, notes=40, pairs=1440, measured_at=9800.0)


async def _enrich(path: Path) -> None:
    """Add what an import leaves empty: open and closed buffers, pending profile updates, a
    merged and a stated fact, server lore, and the guild's measured similarity scale."""
    db = Database.open(path, inline=True)
    store = sqlite_store(db)
    try:
        buffers = store.buffers
        open_id = await buffers.open_buffer(GUILD, OPEN_CHANNEL, "kitchen", 5000.0, 1500.0)
        await buffers.append_messages(
            open_id,
            [
                BufferedMessage(990000000000000001, ANA, "Ana", "the oven is preheating", 5000.0),
                BufferedMessage(990000000000000002, BEN, "Ben", "bring rye flour", 5010.0, None),
            ],
            5010.0,
        )
        waiting = await buffers.open_buffer(GUILD, OUTBOX_CHANNEL, "garden", 6000.0, 1500.0)
        await buffers.append_messages(
            waiting,
            [BufferedMessage(990000000000000003, BEN, "Ben", "tomatoes are ripe", 6000.0)],
            6000.0,
        )
        await buffers.close_buffer(waiting, 8000.0, CloseReason.INACTIVITY)
        noted = await buffers.open_buffer(GUILD, LOUNGE, "lounge", 9000.0, 1500.0)
        await buffers.close_buffer(noted, 9100.0, CloseReason.MAX_AGE)
        await store.notes.commit_conversation_note(
            noted,
            NewNote(
                guild_id=GUILD,
                channel_id=LOUNGE,
                channel_name="lounge",
                note_type="conversation",
                title="Sourdough starter swap",
                summary="Ana and Ben plan to swap sourdough starters on Saturday.",
                topics=("sourdough",),
                decisions=("swap on Saturday",),
                open_questions=(),
                entities=("sourdough",),
                participants=(Participant(ANA, "Ana", 2), Participant(BEN, "Ben", 1)),
                note_date="2026-04-09",
                quality="offline",
                model="offline",
                embedding=hash_embedding("Sourdough starter swap"),
                created_at=9200.0,
                started_at=9000.0,
                ended_at=9100.0,
            ),
            updates_due_at=99999.0,
            planned={ANA: PlannedUpdate('{"operations": []}', 0)},
        )
        facts = await store.profiles.active_facts(GUILD, BEN)
        version = await store.profiles.profile_version(GUILD, BEN)
        old = facts[0]
        merged = NewFact(
            old.section, f"{old.text} (merged)", "consolidation", None, "merge", (old.id,)
        )
        plan = ProfilePlan(added=[merged], retired=[RetiredFact(old.id, "merged")])
        assert await store.profiles.apply_plan(GUILD, BEN, version, plan, 9300.0)
        await store.members.remember_fact(
            GUILD, ANA, "Ana", "interests", "Ana keeps bees", "stated", 9400.0
        )
        await store.members.add_lore(GUILD, ANA, "The server's bakery is called Crumb", 9500.0)
        await store.members.remember_fact(
            GUILD, ANA, "Ana", "other", "Ana dislikes mornings", "stated", 9600.0
        )
        wrong = next(
            f for f in await store.profiles.active_facts(GUILD, ANA) if "mornings" in f.text
        )
        assert await store.pages.remove_fact(GUILD, ANA, wrong.id, "alice", 9700.0)
        await store.meta.set_meta(SCALE_KEY, SCALE.encode())
    finally:
        store.close()


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared source database (copy it before anything could write to it)."""
    path = tmp_path_factory.mktemp("source") / "vivy.db"
    import_files(path, TWO_DAYS, THREAD_LATER)
    anyio.run(_enrich, path)
    return path


@pytest.fixture
def original(source: Path, tmp_path: Path) -> Path:
    """A private copy of the source database."""
    path = tmp_path / "original.db"
    shutil.copy(source, path)
    return path


@pytest.fixture
def second_pg(pg_server: object, pg_uri: str) -> Iterator[str]:
    """Another empty schema beside ``pg_uri``'s, on the same database."""
    info = conninfo_to_dict(pg_uri)
    schema = str(info["options"]).split("=", 1)[1].split(",")[0] + "_b"
    with psycopg.connect(pg_uri, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    info["options"] = f"-c search_path={schema},public"
    try:
        yield psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items()})
    finally:
        with psycopg.connect(pg_uri, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def dump(path: Path) -> dict[str, list[str]]:
    """Every row of every table of a SQLite database but the FTS5 indexes, sorted; with
    the rowid where it means something (the order of a note's participants)."""
    conn = open_readonly(path)
    try:
        names = [
            str(r[0])
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
                " AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' AND name NOT LIKE '%fts%'"
            )
        ]
        found = {}
        for name in names:
            columns = "rowid, *" if name == "note_participants" else "*"
            found[name] = sorted(
                repr(tuple(r)) for r in conn.execute(f"SELECT {columns} FROM {name}")
            )
        return found
    finally:
        conn.close()


def digest(path: Path) -> str:
    """The file's bytes, hashed."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_source_has_every_kind_of_row(source: Path) -> None:
    """The fixture holds what a copy must carry: rows in every copied table, pending work, a
    merged fact, keyword indexes."""
    rows = dump(source)
    assert {table.name for table in COPIED_TABLES if not rows[table.name]} == set()
    conn = open_readonly(source)
    try:
        assert (
            conn.execute("SELECT COUNT(*) FROM channel_buffers WHERE status = 'open'").fetchone()[0]
            == 1
        )
        assert (
            conn.execute("SELECT COUNT(*) FROM channel_buffers WHERE status = 'closed'").fetchone()[
                0
            ]
            == 1
        )
        assert (
            conn.execute(
                "SELECT COUNT(*) FROM profile_updates WHERE status = 'pending'"
            ).fetchone()[0]
            == 2
        )
        assert (
            conn.execute(
                "SELECT COUNT(*) FROM profile_facts WHERE superseded_by IS NOT NULL"
            ).fetchone()[0]
            == 1
        )
        assert (
            conn.execute(
                "SELECT COUNT(*) FROM evidence_windows WHERE embedding IS NOT NULL"
            ).fetchone()[0]
            > 0
        )
    finally:
        conn.close()


def test_sqlite_to_postgresql_and_back_keeps_every_row(
    original: Path, pg_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SQLite -> PostgreSQL -> SQLite gives the same rows in every table (ids, vectors and
    their bits, the participants' order, the id sequences, a guild's similarity scale), and
    both copies pass the checks; the source is not changed by a byte."""
    before = digest(original)
    url = pg_url(pg_uri)
    there = run_cli(capsys, "db", "copy", str(original), url)
    assert there.code == 0, there.err
    lines = there.out.splitlines()
    assert "interaction_notes: 8" in lines and "check source: ok" in lines
    assert "check target: ok" in lines
    assert lines[-1].startswith(f"copied {original} to postgresql://") and "secret" not in there.out
    copied = open_postgres_store(pg_uri, inline=True)
    try:
        stored = anyio.run(copied.search.get_meta, SCALE_KEY)
    finally:
        copied.close()
    assert stored is not None and SimilarityScale.decode(stored) == SCALE
    back = tmp_path / "back.db"
    again = run_cli(capsys, "db", "copy", url, str(back))
    assert again.code == 0, again.err
    assert dump(back) == dump(original)
    assert digest(original) == before


def test_db_check_reads_postgresql(
    original: Path, pg_uri: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``vivy db check`` on the PostgreSQL copy prints the SQLite check's lines, through
    ``--db`` and through ``VIVY_DB`` alike."""
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("MEMORY_GEMINI_TOKEN", raising=False)
    copy_database(original, pg_uri)
    url = pg_url(pg_uri)
    on_sqlite = run_cli(capsys, "db", "check", "--db", str(original))
    on_postgres = run_cli(capsys, "db", "check", "--db", url)
    assert on_postgres.code == on_sqlite.code == 0, on_postgres.out
    assert on_postgres.out.splitlines()[:-1] == on_sqlite.out.splitlines()[:-1]
    assert on_postgres.out.splitlines()[-1].endswith(": ok")
    monkeypatch.setenv("VIVY_DB", url)
    assert run_cli(capsys, "db", "check").out == on_postgres.out


def test_db_check_reports_a_broken_postgresql_database(
    original: Path, pg_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A note without its vector fails the check on PostgreSQL as on SQLite: exit 1."""
    copy_database(original, pg_uri)
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        conn.execute("DELETE FROM vec_notes WHERE note_id = 1")
    result = run_cli(capsys, "db", "check", "--db", pg_url(pg_uri))
    assert result.code == 1
    assert "problem: 8 notes but 7 note vectors" in result.out.splitlines()


def meaning(result: NoteSearchResult) -> dict[int, tuple[object, ...]]:
    """What a search says of each note, without the keyword scores' engine-specific scale."""
    return {
        c.note_id: (
            None if c.similarity is None else round(c.similarity, 4),
            None if c.window_similarity is None else round(c.window_similarity, 4),
            c.bm25 is not None,
            c.window_bm25 is not None,
            round(c.coverage, 6),
            c.terms,
        )
        for c in result.candidates
    }


@pytest.mark.anyio
async def test_the_postgresql_copy_finds_the_notes_the_original_finds(
    original: Path, pg_uri: str, tmp_path: Path
) -> None:
    """The same searches (vector, keywords, evidence) find the same notes with the same
    similarities on the copy, and the copy of the copy finds exactly what the original does."""
    copy_database(original, pg_uri)
    back = tmp_path / "back.db"
    copy_database(pg_uri, back)
    questions = ["who bakes sourdough", "movie night snacks", "python testing library", "bees"]
    searches = [
        NoteSearch(
            guild_id=GUILD,
            vector=hash_embedding(question),
            terms=tuple(query_terms(question)),
            note_type=None,
            candidates=10,
            keyword_candidates=10,
        )
        for question in questions
    ]
    stores = [
        open_sqlite_store(original, inline=True),
        open_postgres_store(pg_uri, inline=True),
        open_sqlite_store(back, inline=True),
    ]
    try:
        lite, pg, again = [await store.search.find_notes(searches) for store in stores]
    finally:
        for store in stores:
            store.close()
    assert all(result.candidates for result in lite)
    assert [meaning(r) for r in pg] == [meaning(r) for r in lite]
    assert again == lite


def test_an_interrupted_copy_continues_where_it_stopped(
    original: Path, pg_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Stopped after some batch, a copy run again with the same arguments ends with exactly
    the rows of the original and says it continued; so does one stopped every few batches
    (in the middle of tables, between them, while writing the merged facts' references)."""

    class Stop(Exception):
        """Raised by the per-batch hook to interrupt a copy."""

    def stop_after(batches: int) -> Callable[[str, int], None]:
        """A hook that interrupts the copy after its ``batches``-th batch."""
        seen: list[str] = []

        def hook(table: str, rows: int) -> None:
            seen.append(table)
            if len(seen) == batches:
                raise Stop(table)

        return hook

    with pytest.raises(Stop):
        copy_database(original, pg_uri, batch_rows=3, after_batch=stop_after(9))
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        progress = conn.execute("SELECT value FROM meta WHERE key = %s", (PROGRESS_KEY,)).fetchone()
    assert progress is not None and "sqlite:" in progress[0]
    resumed = run_cli(capsys, "db", "copy", str(original), pg_url(pg_uri), "--batch-size", "3")
    assert resumed.code == 0, resumed.err
    assert resumed.out.splitlines()[-1].startswith("continued and copied")
    back = tmp_path / "back.db"
    runs = 0
    report: CopyReport | None = None
    while report is None:  # stopped after every third batch, each run continuing the last
        runs += 1
        assert runs < 200, "the copy never finished"
        with contextlib.suppress(Stop):
            report = copy_database(pg_uri, back, batch_rows=2, after_batch=stop_after(3))
    assert runs > 20 and report.resumed and not report.mismatches
    assert dump(back) == dump(original)


@pytest.mark.parametrize("interrupted", ["after the last row", "during the checks"])
def test_a_copy_interrupted_at_its_end_continues_and_checks_again(
    original: Path,
    pg_uri: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    interrupted: str,
) -> None:
    """Ctrl-C after the last row is in, or while both sides are checked: the same command,
    run again, copies nothing more, checks both sides and ends as a copy that was never
    interrupted (it was refused as a non-empty target)."""
    checks = vivy.commands.db.database_checks
    calls: list[str] = []

    def interrupting(store: ReadOnlyStore, environ: Mapping[str, str]) -> Any:
        calls.append("check")
        if interrupted == "during the checks" and len(calls) == 2:
            raise KeyboardInterrupt
        return checks(store, environ)

    def interrupting_copy(*args: Any, **kwargs: Any) -> CopyReport:
        report = copy_database(*args, **kwargs)
        if interrupted == "after the last row" and not calls:
            calls.append("copied")
            raise KeyboardInterrupt
        return report

    monkeypatch.setattr(vivy.commands.db, "database_checks", interrupting)
    monkeypatch.setattr(vivy.commands.db, "copy_database", interrupting_copy)
    stopped = run_cli(capsys, "db", "copy", str(original), pg_url(pg_uri))
    assert stopped.code == EXIT_INTERRUPTED, stopped.err
    again = run_cli(capsys, "db", "copy", str(original), pg_url(pg_uri))
    assert again.code == 0, again.err
    assert again.out.splitlines()[-1].startswith("continued and copied")
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        left = conn.execute("SELECT value FROM meta WHERE key = %s", (PROGRESS_KEY,)).fetchone()
    assert left is None  # concluded once both sides passed their checks


def test_a_target_with_rows_is_refused_without_a_byte_changed(
    original: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A SQLite target holding a database is refused in one line with exit 2 and stays as
    it was; --replace empties it and copies."""
    target = tmp_path / "other.db"
    import_files(target, THREAD_LATER)
    before = digest(target)
    refused = run_cli(capsys, "db", "copy", str(original), str(target))
    assert refused.code == EXIT_USAGE
    assert (
        refused.err.strip().splitlines() == [refused.err.strip()]
        and "pass --replace" in refused.err
    )
    assert digest(target) == before
    replaced = run_cli(capsys, "db", "copy", str(original), str(target), "--replace")
    assert replaced.code == 0, replaced.err
    assert dump(target) == dump(original)


def test_a_postgresql_target_with_rows_is_refused_unless_replaced(
    original: Path, pg_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A PostgreSQL target that holds rows (or another source's unfinished copy) is refused
    with nothing written; --replace empties it and the copy equals the source."""
    other = tmp_path / "other.db"
    import_files(other, THREAD_LATER)
    copy_database(other, pg_uri)
    url = pg_url(pg_uri)

    def snapshot() -> list[tuple[object, ...]]:
        with psycopg.connect(pg_uri, autocommit=True) as conn:
            return [
                tuple(
                    conn.execute(
                        "SELECT COUNT(*), md5(string_agg(t::text, ',' ORDER BY t::text))"
                        f" FROM {t.name} t"
                    ).fetchone()
                    or ()
                )
                for t in COPIED_TABLES
            ]

    before = snapshot()
    refused = run_cli(capsys, "db", "copy", str(original), url)
    assert refused.code == EXIT_USAGE and "is not empty" in refused.err
    assert snapshot() == before
    replaced = run_cli(capsys, "db", "copy", str(original), url, "--replace")
    assert replaced.code == 0, replaced.err
    back = tmp_path / "back.db"
    copy_database(pg_uri, back)
    assert dump(back) == dump(original)


def test_an_unfinished_copy_of_another_source_is_not_resumed(
    original: Path, pg_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A target holding an interrupted copy of another database is refused, not mixed."""
    other = tmp_path / "other.db"
    shutil.copy(original, other)

    def stop(table: str, rows: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        copy_database(other, pg_uri, after_batch=stop)
    refused = run_cli(capsys, "db", "copy", str(original), pg_url(pg_uri))
    assert refused.code == EXIT_USAGE
    assert "an unfinished copy of another database" in refused.err


@pytest.mark.anyio
async def test_a_source_in_the_middle_of_a_reembed_is_refused(
    original: Path, tmp_path: Path
) -> None:
    """Staged vectors of an unfinished ``vivy reembed`` are not copied: the copy refuses to
    start (and creates no target) until the reembed is finished."""
    store = open_sqlite_store(original, inline=True)
    try:
        await store.reembed.begin_staging("another-model:64")
    finally:
        store.close()
    with pytest.raises(StorageError, match="unfinished `vivy reembed`"):
        copy_database(original, tmp_path / "target.db")
    assert not (tmp_path / "target.db").exists()


def test_postgresql_to_postgresql_with_another_vector_dimension(
    pg_uri: str, second_pg: str, tmp_path: Path
) -> None:
    """A database whose notes have 64-dimensional vectors gets a ``vec_notes`` of that
    dimension on the target, and the copy passes its checks."""
    source = tmp_path / "small.db"

    async def fill() -> None:
        store = open_sqlite_store(source, inline=True)
        try:
            assert await store.meta.adopt_embedding_model("tiny", 64) is None
            buffer_id = await store.buffers.open_buffer(GUILD, LOUNGE, "lounge", 1.0, 10.0)
            await store.buffers.close_buffer(buffer_id, 2.0, CloseReason.INACTIVITY)
            note = NewNote(
                guild_id=GUILD,
                channel_id=LOUNGE,
                channel_name="lounge",
                note_type="conversation",
                title="Tiny",
                summary="A tiny note.",
                topics=(),
                decisions=(),
                open_questions=(),
                entities=(),
                participants=(Participant(ANA, "Ana", 1),),
                note_date="2026-01-01",
                quality="offline",
                model="offline",
                embedding=hash_embedding("tiny", 64),
                created_at=3.0,
            )
            assert await store.notes.commit_conversation_note(buffer_id, note) is not None
        finally:
            store.close()

    anyio.run(fill)
    copy_database(source, pg_uri)
    report = copy_database(pg_uri, second_pg)
    assert not report.mismatches
    pg = PgDatabase.open(second_pg)
    try:
        row = pg.read_sync(
            lambda conn: conn.execute("SELECT vector_dims(embedding) FROM vec_notes").fetchone()
        )
    finally:
        pg.close()
    assert row == (64,)
    back = tmp_path / "back.db"
    copy_database(second_pg, back)
    assert dump(back) == dump(source)


def test_every_table_of_both_schemas_is_copied_or_named_as_not_copied(
    pg_uri: str, tmp_path: Path
) -> None:
    """The copy's two lists cover every table the migrations create on each engine, and
    every copied table exists on both: a new table fails here until it is placed."""
    Database.open(tmp_path / "fresh.db").close()
    conn = sqlean.connect(str(tmp_path / "fresh.db"))
    try:
        lite = {
            str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
    finally:
        conn.close()
    PgDatabase.open(pg_uri).close()
    with psycopg.connect(pg_uri, autocommit=True) as pg:
        tables = pg.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        postgres = {str(r[0]) for r in tables.fetchall()}
    copied = {table.name for table in COPIED_TABLES}
    shadow = {name for name in lite if name.startswith(("notes_fts_", "evidence_fts_"))}
    assert copied <= lite and copied <= postgres
    assert lite - shadow - copied <= NOT_COPIED
    assert postgres - copied <= NOT_COPIED


@dataclass(frozen=True)
class Failure:
    """What a failed ``vivy db copy`` (or ``check``) run in a subprocess answered."""

    code: int
    stderr: str


def run_vivy(*argv: str, cwd: Path) -> Failure:
    """``python -m vivy.cli ARGV`` in a subprocess, without Vivy's settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIVY_")}
    done = subprocess.run(
        [sys.executable, "-m", "vivy.cli", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return Failure(done.returncode, done.stderr)


def closed_port() -> int:
    """A loopback port nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_operator_mistakes_get_one_clear_line(original: Path, tmp_path: Path) -> None:
    """A missing source, an unreachable or malformed URL (its password never shown), and a
    target that is the source: one stderr line, no traceback, nothing written."""
    before = digest(original)
    port = closed_port()
    cases = [
        (
            ("db", "copy", "missing.db", str(tmp_path / "t.db")),
            EXIT_RUNTIME,
            "no such database file: missing.db",
        ),
        (
            ("db", "copy", str(original), f"postgresql://vivy:secret@127.0.0.1:{port}/vivy"),
            EXIT_RUNTIME,
            f"cannot connect to postgresql://vivy@127.0.0.1:{port}/vivy",
        ),
        (
            ("db", "copy", str(original), "postgresql://vivy:secret@[bad/vivy"),
            EXIT_RUNTIME,
            "cannot connect to postgresql://?",
        ),
        (("db", "copy", str(original), str(original)), EXIT_USAGE, "is the source itself"),
        (
            ("db", "check", "--db", f"postgresql://vivy:secret@127.0.0.1:{port}/vivy"),
            EXIT_RUNTIME,
            f"vivy db check: cannot connect to postgresql://vivy@127.0.0.1:{port}/vivy",
        ),
        (
            ("db", "check", "--db", "postgresql://vivy:secret@[bad/vivy"),
            EXIT_RUNTIME,
            "vivy db check: cannot connect to postgresql://?",
        ),
    ]
    for argv, code, names in cases:
        failed = run_vivy(*argv, cwd=tmp_path)
        assert failed.code == code, failed.stderr
        assert len(failed.stderr.splitlines()) == 1, failed.stderr
        assert names in failed.stderr and "secret" not in failed.stderr
    assert digest(original) == before
    assert not (tmp_path / "t.db").exists()
