"""``vivy demo``: the operator search URL it prints is served at that address while it runs."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import psycopg
import pytest

from tests.pg import embedded_postgres
from vivy.cli import main
from vivy.commands.demo import run_demo
from vivy.storage.postgres.embedded import embedded_server

ROOT = Path(__file__).resolve().parents[2]

#: ``vivy`` in a child process, its sentences embedded by the tests' hashing double (what the
#: demo serves, not what the model finds, is tested here).
VIVY = [sys.executable, "-m", "tests.hashed_vivy"]


def test_the_printed_operator_search_url_answers(tmp_path: Path) -> None:
    """The demo's "Operator search API (URL): N hits" line holds a URL that gives N hits
    with the token it printed, and the memory page it printed serves that token's view."""
    demo = subprocess.Popen(
        [*VIVY, "demo", "--linger", "30"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "PYTHONUNBUFFERED": "1",
            "GEMINI_API_KEY": "",
            "MEMORY_GEMINI_TOKEN": "",
        },
    )
    try:
        assert demo.stdout is not None
        found = page = token = None
        for line in demo.stdout:
            page = page or re.search(r"the memory page at (http://\S+)/$", line)
            token = token or re.match(r"Token for the memory page \(this run only\): (\S+)", line)
            found = re.match(r"Operator search API \((http://\S+)\): (\d+) hits", line)
            if found:
                break
        assert found is not None, "the demo printed no operator search line"
        assert page is not None and token is not None
        auth = {"Authorization": f"Bearer {token[1]}"}
        request = urllib.request.Request(found[1], headers=auth)
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200
            hits = json.load(answer)["results"]
        assert len(hits) == int(found[2]) > 0
        assert any("game night" in (h["title"] + h["summary"]).lower() for h in hits)
        request = urllib.request.Request(f"{page[1]}/page/guilds", headers=auth)
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert "#/g/" in answer.read().decode()
    finally:
        demo.terminate()
        demo.wait(timeout=30)


def test_the_demo_serves_where_the_settings_say_behind_their_token(tmp_path: Path) -> None:
    """With VIVY_METRICS_PORT and VIVY_API_TOKEN set, the demo listens on that port and its
    operator API answers only with the token, as ``vivy run``'s does."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    demo = subprocess.Popen(
        [*VIVY, "demo", "--linger", "30"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "PYTHONUNBUFFERED": "1",
            "GEMINI_API_KEY": "",
            "MEMORY_GEMINI_TOKEN": "",
            "VIVY_METRICS_HOST": "127.0.0.1",
            "VIVY_METRICS_PORT": str(port),
            "VIVY_API_TOKEN": "s3cret",
        },
    )
    try:
        assert demo.stdout is not None
        found = None
        for line in demo.stdout:
            found = re.match(r"Operator search API \((http://\S+)\): (\d+) hits", line)
            if found:
                break
        assert found is not None, "the demo printed no operator search line"
        assert found[1].startswith(f"http://127.0.0.1:{port}/") and int(found[2]) > 0
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(found[1], timeout=10)
        assert refused.value.code == 401
        refused.value.close()
        request = urllib.request.Request(found[1], headers={"Authorization": "Bearer s3cret"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert len(json.load(answer)["results"]) == int(found[2])
    finally:
        demo.terminate()
        demo.wait(timeout=30)


@pytest.mark.skipif(embedded_postgres is None, reason="embedded_postgres is not installed")
def test_the_demo_runs_on_postgresql(pg_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    """On a PostgreSQL database the demo prints what it prints on SQLite: the notes, the
    profiles, the memory context for the question with its answer, the operator search."""
    assert run_demo(None, url=pg_uri, environ={}) == 0
    out = capsys.readouterr().out
    for heading in ("Notes", "Profiles", "Memory for a question"):
        assert f"======== {heading} " in out
    assert "Sam's dog Bento" in out
    assert "Memory context (" in out and "Vivy would answer" in out
    found = re.search(r"Operator search API \(http://\S+\): (\d+) hits", out)
    assert found is not None and int(found[1]) > 0


@pytest.mark.skipif(embedded_postgres is None, reason="embedded_postgres is not installed")
def test_the_embedded_server_is_deleted_after_use(tmp_path: Path) -> None:
    """``--postgres``'s server answers while in use; afterwards it is stopped and its
    directory is gone."""
    data = tmp_path / "postgres"
    with embedded_server(data) as url, psycopg.connect(url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    assert not data.exists()


def test_postgres_and_db_together_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """``--postgres`` starts its own server, so a ``--db`` beside it is a usage error."""
    assert main(["demo", "--postgres", "--db", "vivy.db"]) == 2
    assert "--postgres starts a server of its own" in capsys.readouterr().err


@pytest.mark.sentence_model
def test_a_question_in_other_words_finds_the_message_that_answers_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without a key, the demo's question in other words ("which instrument did Maya
    learn?") shares no content word with the message that answers it (by the keyword
    index's porter stems), and its memory context quotes that message under its note."""
    import sqlean

    from vivy.commands.demo import PARAPHRASED_ANSWER, PARAPHRASED_QUESTION
    from vivy.text.terms import query_terms

    db = sqlean.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
    stems = []
    for text in (PARAPHRASED_QUESTION, PARAPHRASED_ANSWER):
        db.execute("DELETE FROM t")
        db.execute("INSERT INTO t (x) VALUES (?)", (" ".join(query_terms(text)),))
        stems.append({row[0] for row in db.execute("SELECT term FROM v")})
    db.close()
    assert stems[0] and not stems[0] & stems[1]

    assert run_demo(str(tmp_path / "demo.db"), environ={}) == 0
    out = capsys.readouterr().out
    section = out.split("======== Memory for a question in other words ")[1]
    notes = section.split("<notes>")[1].split("</notes>")[0]
    assert f"> Maya, Mar 2: wait kai is a musician?? {PARAPHRASED_ANSWER}" in notes
    assert "Violin and Static Lullaby" in notes
    assert "The message that answers it, quoted in the memory: > Maya, Mar 2:" in section
