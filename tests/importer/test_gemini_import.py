"""An import with a Gemini key: the real SDK on real time beside the virtual replay clock."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.hashing import hash_embedding
from vivy.clock import Clock
from vivy.commands.importer import run_import
from vivy.errors import VivyError
from vivy.llm import make_llm
from vivy.memory.scales import SimilarityScale, scale_key
from vivy.retrieval import Retriever
from vivy.retrieval.ranking import GEMINI_CALIBRATION, Calibration
from vivy.storage import profiles as profile_store
from vivy.storage.sqlite.db import Database
from vivy.storage.sqlite.stores import open_sqlite_store
from vivy_lab.fakes.gemini import (
    FakeGemini,
    RecordedRequest,
    Reply,
    answer,
    conversation_answer,
    embeddings,
    error,
    slow,
)

GUILD = 930000000000000001
DANA = 830000000000000001


@pytest.fixture
def fake_gemini() -> Iterator[FakeGemini]:
    """A fake Gemini server on an ephemeral port."""
    server = FakeGemini().start()
    try:
        yield server
    finally:
        server.stop()


def _export(path: Path) -> None:
    """One member, two messages, then silence: one note and one profile update."""
    author = {"id": str(DANA), "name": "dana", "nickname": None, "isBot": False}
    messages = [
        {
            "id": str(1500000000000000000 + i),
            "type": "Default",
            "timestamp": f"2026-05-01T20:0{i}:00+00:00",
            "timestampEdited": None,
            "content": text,
            "author": author,
            "mentions": [],
        }
        for i, text in enumerate(["I live in Denver now", "and I bake bread on weekends"])
    ]
    export = {
        "guild": {"id": str(GUILD), "name": "G"},
        "channel": {"id": "931000000000000001", "type": "GuildTextChat", "name": "kitchen"},
        "messages": messages,
    }
    path.write_text(json.dumps(export))


NOTE = {
    "title": "Dana's weekend baking",
    "summary": "Dana said she lives in Denver and bakes bread on weekends.",
    "topics": ["baking"],
    "decisions": [],
    "open_questions": [],
    "entities": ["Denver"],
}


def test_import_with_a_gemini_key_survives_slow_answers(
    tmp_path: Path, fake_gemini: FakeGemini, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 0.3 s answer does not time out: network waits run on real time, not the mock clock."""
    export = tmp_path / "export.json"
    _export(export)
    fake_gemini.script_generate(
        slow(answer(NOTE), 0.3),
        answer({"operations": [{"op": "add", "section": "bio", "text": "Lives in Denver"}]}),
    )
    db = tmp_path / "v.db"
    environ = {"GEMINI_API_KEY": "test-key", "GOOGLE_GEMINI_BASE_URL": fake_gemini.base_url}
    assert run_import([str(export)], database=db, environ=environ) == 0
    out = capsys.readouterr().out
    assert "(gemini LLM)" in out and "1 conversation note" in out
    methods = [r.method for r in fake_gemini.requests]
    # The note and one profile update; a one-fact profile needs no nightly consolidation.
    assert methods.count("generateContent") == 2
    assert "batchEmbedContents" in methods
    database = Database.open(db)
    try:
        facts = database.read_sync(profile_store.active_facts, GUILD, DANA)
    finally:
        database.close()
    assert [(f.text, f.source_label) for f in facts] == [
        ("Lives in Denver", "Dana's weekend baking, May 1")
    ]


def test_a_nightly_job_that_fails_fails_the_import(
    tmp_path: Path, fake_gemini: FakeGemini, capsys: pytest.CaptureFixture[str]
) -> None:
    """When Gemini refuses the nightly topic clusters, the day is listed as failed and the
    import ends with an error, not a report of a done day."""
    export = tmp_path / "export.json"
    _export(export)
    fake_gemini.script_generate(
        answer(NOTE),
        answer({"operations": [{"op": "add", "section": "bio", "text": "Lives in Denver"}]}),
        *[error(400, "the cluster request is refused")] * 10,
    )
    environ = {
        "GEMINI_API_KEY": "test-key",
        "GOOGLE_GEMINI_BASE_URL": fake_gemini.base_url,
        "VIVY_MIN_CLUSTER_NOTES": "1",
    }
    with pytest.raises(VivyError, match="nightly job failed for 2026-05-01"):
        run_import([str(export)], database=tmp_path / "v.db", environ=environ)
    out = capsys.readouterr().out
    assert "failed:      2026-05-01" in out
    assert "nightly job: none ran to the end" in out


def test_a_too_long_summary_is_clipped_and_its_note_written(
    tmp_path: Path, fake_gemini: FakeGemini, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 6,000-character summary is cut at a sentence end and the note is written on the
    first answer, instead of the buffer being retried for ever."""
    export = tmp_path / "export.json"
    _export(export)
    fake_gemini.script_generate(
        answer({**NOTE, "summary": "Dana bakes bread on weekends in Denver. " * 150}),
        answer({"operations": [{"op": "add", "section": "bio", "text": "Lives in Denver"}]}),
    )
    db = tmp_path / "v.db"
    environ = {"GEMINI_API_KEY": "test-key", "GOOGLE_GEMINI_BASE_URL": fake_gemini.base_url}
    assert run_import([str(export)], database=db, environ=environ) == 0
    assert "1 conversation note" in capsys.readouterr().out
    assert [r.method for r in fake_gemini.requests].count("generateContent") == 2
    database = Database.open(db)
    try:
        summaries = database.read_sync(
            lambda conn: [r[0] for r in conn.execute("SELECT summary FROM interaction_notes")]
        )
    finally:
        database.close()
    assert len(summaries) == 1
    assert 1000 < len(summaries[0]) <= 1200 and summaries[0].endswith("in Denver.")


SUBJECTS = [
    ("adopted a beagle puppy named Biscuit", "Biscuit the beagle puppy chews shoes"),
    ("my sourdough starter finally rose", "baking sourdough bread with rye flour"),
    ("we signed the lease on the new apartment", "the apartment has a huge kitchen"),
    ("training for the Boston marathon", "long runs before the marathon in spring"),
    ("the violin recital is on Friday", "practising scales for the violin recital"),
    ("my laptop battery died again", "ordering a new laptop battery"),
    ("planted tomatoes and basil in the garden", "the garden basil is growing fast"),
    ("learning Japanese with kanji flashcards", "kanji flashcards every morning"),
    ("the Elden Ring boss took forty tries", "Elden Ring bosses need patience"),
    ("our flight to Lisbon got cancelled", "rebooking the Lisbon flight"),
    ("repainting the bathroom sage green", "sage green paint for the bathroom"),
    ("the chess club meets on Tuesdays", "studying the Sicilian for chess club"),
]


def _subjects_export(path: Path) -> None:
    """One member talking about a different subject every two hours of one day."""
    author = {"id": str(DANA), "name": "dana", "nickname": None, "isBot": False}
    messages = [
        {
            "id": str(1500000000000000000 + 10 * number + line),
            "type": "Default",
            "timestamp": f"2026-05-01T{2 * number:02d}:0{line}:00+00:00",
            "timestampEdited": None,
            "content": text,
            "author": author,
            "mentions": [],
        }
        for number, lines in enumerate(SUBJECTS)
        for line, text in enumerate(lines)
    ]
    export = {
        "guild": {"id": str(GUILD), "name": "G"},
        "channel": {"id": "931000000000000001", "type": "GuildTextChat", "name": "chat"},
        "messages": messages,
    }
    path.write_text(json.dumps(export))


def _hashed_embeddings(recorded: RecordedRequest) -> Reply | None:
    """Embeddings that carry the words of each text (the hashing test double at the
    dimension asked for), as a real model's carry their meaning; nothing else."""
    if recorded.method != "batchEmbedContents":
        return None
    vectors = []
    for item in recorded.body["requests"]:
        text = " ".join(part.get("text", "") for part in item["content"]["parts"])
        vectors.append(hash_embedding(text, int(item["outputDimensionality"])))
    return embeddings(vectors)


def test_gemini_vectors_get_a_measured_scale_not_the_estimate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """After an import through Gemini (the real SDK against the stand-in, whose vectors
    carry each text's words), the nightly job has measured the guild's similarity scale
    for gemini-embedding-001 from its own vectors, and the retriever ranks the guild on it
    instead of the estimated Gemini scale."""
    export = tmp_path / "export.json"
    _subjects_export(export)
    with FakeGemini(route=_hashed_embeddings) as server:
        server.script_generate(
            *[
                conversation_answer(
                    {
                        "title": first.capitalize(),
                        "summary": f"Dana said: {first}; {second}.",
                        "topics": [],
                        "decisions": [],
                        "open_questions": [],
                        "entities": [],
                    },
                    {DANA: []},
                )
                for first, second in SUBJECTS
            ]
        )
        environ = {
            "GEMINI_API_KEY": "test-key",
            "GOOGLE_GEMINI_BASE_URL": server.base_url,
            "VIVY_IMPORT_CONCURRENCY": "1",
            "VIVY_MIN_CLUSTER_NOTES": "100",
        }
        db = tmp_path / "v.db"
        assert run_import([str(export)], database=db, environ=environ) == 0
        assert f"{len(SUBJECTS)} conversation notes" in capsys.readouterr().out

        async def read() -> tuple[SimilarityScale | None, Calibration]:
            store = open_sqlite_store(db, inline=True)
            llm = make_llm(environ, clock=Clock.wall())
            try:
                assert (llm.embedding_model, llm.dimension) == ("gemini-embedding-001", 768)
                stored = await store.search.get_meta(scale_key(GUILD, llm.embedding_model, 768))
                measured = None if stored is None else SimilarityScale.decode(stored)
                retriever = Retriever(store.search, llm, Clock.wall())
                return measured, await retriever.calibration(GUILD)
            finally:
                store.close()
                await llm.aclose()

        measured, used = anyio.run(read)
    assert measured is not None
    assert measured.notes == len(SUBJECTS)
    assert used == Calibration(measured.floor, measured.ceiling) != GEMINI_CALIBRATION
    assert measured.floor < 0.3 < measured.ceiling
