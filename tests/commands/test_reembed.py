"""``vivy reembed``: after an embedding model change Vivy refuses to start until it has run."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
import sqlean

import vivy.commands.reembed as reembed_command
from tests.hashing import HashingEmbedder, hash_embedding, sentence_model
from tests.importer import GUILD, TWO_DAYS, import_files
from tests.pg import ENGINES, pg_url
from vivy.actors.note_writer import contextual_text
from vivy.app import running_app
from vivy.clock import Clock
from vivy.commands.db import check_database
from vivy.config import Settings
from vivy.errors import ConfigError
from vivy.importer import import_exports
from vivy.llm.metered import MeteredLLM, NullMeter
from vivy.llm.offline import LOCAL_EMBEDDING_DIMENSION, LOCAL_EMBEDDING_MODEL, OfflineLLM
from vivy.llm.port import LLM
from vivy.retrieval import NoteHit, Retriever
from vivy.storage.dialect import Tx
from vivy.storage.maintenance import count_rows
from vivy.storage.meta import get_meta
from vivy.storage.postgres.db import PgDatabase
from vivy.storage.sqlite.checks import vec_notes_dimension
from vivy.storage.sqlite.db import Connection, Database
from vivy.storage.sqlite.schema import serialize_vector
from vivy.storage.sqlite.stores import sqlite_store

from . import run_cli

pytestmark = pytest.mark.anyio


class SmallModel(OfflineLLM):
    """Another embedding model: hashing into 64 dimensions under a new name."""

    def __init__(self) -> None:
        super().__init__(embedder=HashingEmbedder(dimension=64, model="small-hash-v2"))


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database whose notes were embedded by the offline model."""
    db = tmp_path_factory.mktemp("reembed") / "v.db"
    with sentence_model():  # the CLI is configured with the local model
        import_files(db, TWO_DAYS)
    return db


@pytest.fixture
def copy(imported: Path, tmp_path: Path) -> Path:
    """A private copy of the imported database."""
    target = tmp_path / "v.db"
    shutil.copy(imported, target)
    return target


async def _start(db: Path, llm: LLM) -> None:
    """Start the whole app on ``db`` and stop it again."""
    clock = Clock.starting_at(1775800000.0)
    settings = Settings(database=db)
    async with running_app(settings, clock=clock, inline=True, llm=llm, scheduler=False):
        await anyio.sleep(1)


def _nearest(conn: Connection, vector: list[float]) -> tuple[int, float]:
    row = conn.execute(
        "SELECT note_id, vec_distance_cosine(embedding, ?) AS distance FROM vec_notes"
        " WHERE guild_id = ? ORDER BY distance LIMIT 1",
        (serialize_vector(vector), GUILD),
    ).fetchone()
    return int(row[0]), float(row[1])


async def test_model_change_is_refused_until_reembed_has_run(copy: Path) -> None:
    """Starting with another model names `vivy reembed`; after it, Vivy starts and searches."""
    with pytest.raises(ConfigError, match="run `vivy reembed` first"):
        await _start(copy, SmallModel())
    db = Database.open(copy, inline=True)
    seen: list[int] = []
    try:
        report = await reembed_command.reembed_notes(
            sqlite_store(db), SmallModel(), batch_size=4, progress=seen.append
        )
        assert (report.notes, report.model, report.dimension) == (6, "small-hash-v2", 64)
        assert (
            report.previous == f"{LOCAL_EMBEDDING_MODEL} ({LOCAL_EMBEDDING_DIMENSION} dimensions)"
        )
        assert seen == [4, 6]
        assert await db.read(vec_notes_dimension) == 64
        assert await db.read(get_meta, "embedding_model") == "small-hash-v2"
        assert await db.read(get_meta, "embedding_dimension") == "64"
        assert await db.read(count_rows, "vec_notes") == 6
        assert await db.read(get_meta, "reembed_model") is None
        first = await db.read(
            lambda c: c.execute(
                "SELECT id, channel_name, note_date, topics, title, summary FROM interaction_notes"
                " WHERE id = 1"
            ).fetchone()
        )
        people = ["Ana", "ben", "Cleo"]  # in the order they first spoke
        text = contextual_text(first[1], first[2], people, json.loads(first[3]), first[4], first[5])
        note_id, distance = await db.read(_nearest, hash_embedding(text, 64))
        assert note_id == 1 and distance < 1e-6  # the same text the NoteWriter embedded
    finally:
        db.close()
    await _start(copy, SmallModel())


async def test_interrupted_reembed_resumes_and_keeps_old_vectors_meanwhile(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Until every note has a new vector the old ones serve; a re-run reuses staged vectors."""

    class Failing(SmallModel):
        calls = 0

        async def embed(self, texts: Any, task: Any) -> list[list[float]]:
            Failing.calls += 1
            if Failing.calls == 2:
                raise RuntimeError("connection reset")
            return await super().embed(texts, task)

    db = Database.open(copy, inline=True)
    try:
        with pytest.raises(RuntimeError):
            await reembed_command.reembed_notes(sqlite_store(db), Failing(), batch_size=4)
        assert await db.read(vec_notes_dimension) == LOCAL_EMBEDDING_DIMENSION
        assert await db.read(get_meta, "embedding_model") == LOCAL_EMBEDDING_MODEL
        capsys.readouterr()
        assert check_database(copy, environ={}) == 0
        assert "interrupted `vivy reembed` left staged vectors" in capsys.readouterr().out
        report = await reembed_command.reembed_notes(sqlite_store(db), SmallModel(), batch_size=4)
        assert (report.notes, report.resumed) == (6, 4)
        assert await db.read(vec_notes_dimension) == 64
    finally:
        db.close()


def test_command_reembeds_with_the_configured_model(
    copy: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`vivy reembed` uses the configured LLM, embeds the evidence windows again with it, and
    reports the old and the new model; run again with the same model it leaves the notes as
    they are and says so, unless --force asks for everything again."""

    def configured(environ: Mapping[str, str], *, clock: Clock, **_: Any) -> LLM:
        return MeteredLLM(SmallModel(), NullMeter(), clock)

    monkeypatch.setattr(reembed_command, "make_llm", configured)
    r = run_cli(capsys, "reembed", "--db", str(copy))
    assert r.code == 0, r.err
    assert r.out.strip() == (
        "re-embedded 6 notes and 7 evidence windows with small-hash-v2 (64 dimensions); "
        f"before: {LOCAL_EMBEDDING_MODEL} ({LOCAL_EMBEDDING_DIMENSION} dimensions)"
    )
    conn = sqlean.connect(str(copy))
    lengths = conn.execute("SELECT DISTINCT length(embedding) FROM evidence_windows").fetchall()
    conn.close()
    assert [tuple(row) for row in lengths] == [(64 * 4,)]
    again = run_cli(capsys, "reembed", "--db", str(copy))
    assert again.code == 0, again.err
    assert again.out.strip() == (
        "the notes are embedded with small-hash-v2 (64 dimensions) already;"
        " embedded 0 evidence windows that had none (--force re-embeds everything)"
    )
    forced = run_cli(capsys, "reembed", "--force", "--db", str(copy))
    assert forced.code == 0, forced.err
    assert forced.out.strip().startswith(
        "re-embedded 6 notes and 7 evidence windows with small-hash-v2 (64 dimensions)"
    )


def test_command_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing database exits 1 without creating it; a bad batch size exits 2."""
    missing = tmp_path / "missing.db"
    r = run_cli(capsys, "reembed", "--db", str(missing))
    assert r.code == 1
    assert r.err.startswith(f"vivy reembed: no such database file: {missing};")
    assert not missing.exists()
    assert run_cli(capsys, "reembed", "--batch-size", "0").code == 2


class OldModel(OfflineLLM):
    """The model a database was filled with before: 768 dimensions under another name."""

    def __init__(self) -> None:
        super().__init__(embedder=HashingEmbedder(dimension=768, model="old-hash-768"))


@pytest.fixture(params=ENGINES)
def old_database(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Settings, str]:
    """A database of either engine whose notes and evidence :class:`OldModel` embedded,
    and its ``--db`` argument; the configured model is the shipped offline one."""
    for name in ("GEMINI_API_KEY", "MEMORY_GEMINI_TOKEN", "VIVY_LLM_PROVIDER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("VIVY_EMBEDDING_PROVIDER", raising=False)
    if request.param == "postgres":
        uri = request.getfixturevalue("pg_uri")
        settings = replace(Settings(), database=tmp_path / "unused.db", database_url=uri)
        argument = pg_url(uri)
    else:
        settings = Settings(database=tmp_path / "v.db")
        argument = str(tmp_path / "v.db")
    report = import_exports([TWO_DAYS], settings, llm=OldModel)
    assert report.notes_written > 0
    return settings, argument


def _embedded(tx: Tx, dimension: int) -> tuple[int, int]:
    """Note vectors of ``dimension`` floats, and evidence windows embedded with as many."""
    dims = tx.dialect.vector_dims.format("embedding")
    notes = tx.scalar(f"SELECT COUNT(*) FROM vec_notes WHERE {dims} = ?", (dimension,))
    windows = tx.scalar(
        f"SELECT COUNT(*) FROM evidence_windows WHERE embedding IS NOT NULL AND {dims} = ?",
        (dimension,),
    )
    return int(str(notes)), int(str(windows))


def _sampled(settings: Settings, dimension: int) -> tuple[int, int]:
    """Note vectors and evidence windows of the database stored with ``dimension`` floats."""
    target = settings.target
    owner = (
        PgDatabase.open(target, inline=True)
        if isinstance(target, str)
        else Database.open(target, inline=True)
    )
    try:
        return anyio.run(owner.read, _embedded, dimension, backend="trio")
    finally:
        owner.close()


def _started(settings: Settings, question: str) -> list[NoteHit]:
    """Start the whole app with the shipped offline model and search the guild's notes."""

    async def start() -> list[NoteHit]:
        clock = Clock.starting_at(1775800000.0)
        async with running_app(
            settings, clock=clock, inline=True, llm=OfflineLLM(), scheduler=False
        ) as app:
            retriever = Retriever(app.store.search, app.llm, app.clock)
            return await retriever.search_notes(GUILD, question, limit=3)

    return anyio.run(start, backend="trio")


@pytest.mark.sentence_model
def test_another_models_database_is_refused_then_moved_by_reembed(
    old_database: tuple[Settings, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """On both engines, notes embedded by a 768-dimension model are reported by start-up,
    `vivy search` and `vivy db check`, never searched with the configured 256-dimension
    model; `vivy reembed` moves every note and window to it, after which Vivy starts and
    finds notes by vector."""
    settings, argument = old_database
    with pytest.raises(ConfigError, match=r"old-hash-768 \(768 dimensions\).*vivy reembed"):
        _started(settings, "sourdough")
    refused = run_cli(capsys, "search", "--db", argument, "--guild", str(GUILD), "sourdough")
    assert refused.code != 0
    assert refused.err.startswith("vivy search: the notes in this database were embedded with")
    assert "run `vivy reembed` first" in refused.err and refused.out == ""
    checked = run_cli(capsys, "db", "check", "--db", argument)
    assert "Vivy will not start with it until `vivy reembed` has run" in checked.out
    notes, windows = _sampled(settings, 768)
    assert notes > 0 and windows > 0

    moved = run_cli(capsys, "reembed", "--db", argument)
    assert moved.code == 0, moved.err
    assert moved.out.strip() == (
        f"re-embedded {notes} notes and {windows} evidence windows with"
        f" {LOCAL_EMBEDDING_MODEL} ({LOCAL_EMBEDDING_DIMENSION} dimensions);"
        " before: old-hash-768 (768 dimensions)"
    )
    assert _sampled(settings, 768) == (0, 0)
    assert _sampled(settings, LOCAL_EMBEDDING_DIMENSION) == (notes, windows)
    checked = run_cli(capsys, "db", "check", "--db", argument)
    assert checked.code == 0 and "warning" not in checked.out
    assert f"{LOCAL_EMBEDDING_MODEL} ({LOCAL_EMBEDDING_DIMENSION} dimensions)" in checked.out
    found = run_cli(capsys, "search", "--db", argument, "--guild", str(GUILD), "sourdough")
    assert found.code == 0 and "sourdough" in found.out
    hits = _started(settings, "who bakes bread for a living?")
    assert hits and hits[0].vector_score is not None
