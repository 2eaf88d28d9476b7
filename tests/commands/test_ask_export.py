"""``vivy ask`` and ``vivy export`` on SQLite and on the embedded PostgreSQL, through ``vivy``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.importer import ANA, BEN, CLEO, GUILD, TWO_DAYS
from tests.pg import ENGINES, pg_url
from vivy.cli import EXIT_USAGE
from vivy.storage.engines import open_view, target_of

from . import run_cli

pytestmark = pytest.mark.parametrize("engine", ENGINES)


@pytest.fixture
def imported(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> str:
    """``--db`` of a database of the engine after ``vivy import`` of the two-day export."""
    if engine == "postgres":
        database = pg_url(request.getfixturevalue("pg_uri"))
    else:
        database = str(tmp_path / "vivy.db")
    result = run_cli(capsys, "import", str(TWO_DAYS), "--db", database)
    assert result.code == 0, result.err
    return database


def test_ask_prints_the_memory_and_the_answer_for_the_member(
    imported: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``vivy ask --as ben`` builds the memory the bot would for ben (his profile, the notes
    that match) and prints the configured model's answer built from it."""
    argv = ("ask", "--guild", str(GUILD), "--as", "ben", "--db", imported)
    result = run_cli(capsys, *argv, "what", "are", "the", "plans?")
    assert result.code == 0, result.err
    context, _, answer = result.out.partition("Vivy would answer (offline):")
    assert context.startswith("ben asks: what are the plans?")
    assert '<user name="ben">' in context and "Lives in Austin" in context
    assert "let's do Tokyo" in context
    assert "Tokyo" in answer


def test_ask_without_a_member_brings_the_mentioned_ones(
    imported: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without ``--as`` the operator asks (no profile of theirs); a ``<@id>`` mention is shown
    as the name and brings that member's profile."""
    result = run_cli(
        capsys, "ask", "--guild", str(GUILD), "--db", imported, f"what does <@{CLEO}> bake?"
    )
    assert result.code == 0, result.err
    assert result.out.startswith("operator asks: what does @Cleo bake?")
    assert '<user name="Cleo">' in result.out and "Loves baking sourdough" in result.out
    assert '<user name="operator">' not in result.out


def test_ask_refuses_an_unknown_guild_and_member(
    imported: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unknown guild or member is one line and exit 2, not an empty memory."""
    unknown = run_cli(capsys, "ask", "--guild", "1", "--db", imported, "hello?")
    assert unknown.code == EXIT_USAGE
    assert unknown.err == (
        "vivy ask: guild 1 is not in this database; `vivy guilds` lists the guilds it remembers\n"
    )
    nobody = run_cli(capsys, "ask", "--guild", str(GUILD), "--as", "zed", "--db", imported, "hi")
    assert nobody.code == EXIT_USAGE
    assert f"no member of Test Guild ({GUILD}) goes by 'zed'" in nobody.err


def _stored(database: str) -> tuple[dict[int, set[str]], dict[int, set[str]]]:
    """Every member's stored fact texts (retired ones too) and kept message texts, by id."""
    facts: dict[int, set[str]] = {}
    lines: dict[int, set[str]] = {}
    with open_view(target_of(database)) as store:
        for user_id, _ in store.guild_members(GUILD):
            records = store.profile_records(GUILD, user_id, include_invalidated=True)
            facts[user_id] = {f.text for f in records}
        for line in store.note_lines(GUILD):
            lines.setdefault(line.author_id, set()).add(line.text)
    return facts, lines


def test_a_member_export_holds_all_of_theirs_and_nothing_of_anyone_else(
    imported: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ben's export holds every fact and kept message of his, and no other member's fact or
    message, nor their id beyond ben's own words (he mentions Ana)."""
    out = tmp_path / "ben.json"
    argv = ("export", "--guild", str(GUILD), "--member", str(BEN), "--out", str(out))
    result = run_cli(capsys, *argv, "--db", imported)
    assert result.code == 0, result.err
    assert result.out.startswith(f"wrote {out} (member {BEN} of Test Guild ({GUILD}): 3 facts")
    text = out.read_text(encoding="utf-8")
    document = json.loads(text)
    member = document["member"]
    facts, lines = _stored(imported)
    assert member["id"] == str(BEN) and member["name"] == "ben"
    assert {f["text"] for f in member["facts"]} == facts[BEN] != set()
    assert {m["text"] for m in member["messages"]} == lines[BEN] != set()
    beyond_his_words = json.dumps(
        {**document, "member": {**member, "messages": []}}, ensure_ascii=False
    )
    for other in (ANA, CLEO):  # his own words may mention them; nothing else may
        assert str(other) not in beyond_his_words
        for said in facts.get(other, set()) | lines[other]:
            assert said not in text, said


def test_a_guild_export_holds_its_notes_evidence_and_profiles(
    imported: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The guild's export holds each note with its kept messages and each member's facts with
    their sources; ``--member`` takes a name too."""
    out = tmp_path / "guild.json"
    result = run_cli(capsys, "export", "--guild", str(GUILD), "--out", str(out), "--db", imported)
    assert result.code == 0, result.err
    document = json.loads(out.read_text(encoding="utf-8"))
    facts, lines = _stored(imported)
    assert document["format"] == "vivy-memory-export"
    assert document["guild"] == {"id": str(GUILD), "name": "Test Guild"}
    exported_lines = {line["text"] for note in document["notes"] for line in note["evidence"]}
    assert exported_lines == set().union(*lines.values())
    by_member = {m["id"]: {f["text"] for f in m["facts"]} for m in document["members"]}
    assert by_member == {str(user): texts for user, texts in facts.items()}
    sources = [f["source"] for m in document["members"] for f in m["facts"]]
    assert sources and all(s["label"] and s["note_id"] for s in sources)
    named = tmp_path / "cleo.json"
    by_name = run_cli(
        capsys, "export", "--guild", str(GUILD), "--member", "cleo", "--out", str(named),
        "--db", imported,
    )  # fmt: skip
    assert by_name.code == 0, by_name.err
    assert json.loads(named.read_text(encoding="utf-8"))["member"]["id"] == str(CLEO)
