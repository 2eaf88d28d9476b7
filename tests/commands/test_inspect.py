"""``vivy profile`` and ``vivy notes`` on an imported database."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.hashing import sentence_model
from tests.importer import BEN, CLEO, GUILD, TWO_DAYS, import_files
from vivy.memory.facts import NewFact, RetiredFact
from vivy.state.profile import ProfilePlan
from vivy.storage import guilds, members
from vivy.storage import profiles as profile_store
from vivy.storage.sqlite.db import Database

from . import run_cli


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with the two-day fixture imported (shared; copy it before changing it)."""
    db = tmp_path_factory.mktemp("inspect") / "v.db"
    with sentence_model():  # the CLI is configured with the local model
        import_files(db, TWO_DAYS)
    return db


def test_profile_shows_active_facts_by_section_with_sources(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each fact is listed under its section with its `[note title, Mon D]` source."""
    r = run_cli(capsys, "profile", "--db", str(imported), "--guild", str(GUILD), str(BEN))
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == f"ben ({BEN}) in Test Guild ({GUILD}): 3 active facts"
    assert lines[1] == "bio"
    assert lines[2].startswith("  - Lives in Austin  [") and lines[2].endswith(", Apr 6]")
    assert "skills" in lines
    assert "invalidated" not in r.out


def test_profile_all_shows_invalidated_facts_with_reason_and_successor(
    imported: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With --all, a superseded fact shows when, why, and which fact replaced it."""
    db = tmp_path / "v.db"
    shutil.copy(imported, db)
    database = Database.open(db)
    try:
        austin = next(
            f
            for f in database.read_sync(profile_store.active_facts, GUILD, BEN)
            if "Austin" in f.text
        )
        version = database.read_sync(profile_store.profile_version, GUILD, BEN)
        plan = ProfilePlan(
            added=[NewFact("bio", "Lives in Denver", "stated", None, "stated", (austin.id,))],
            retired=[RetiredFact(austin.id, "moved to Denver")],
        )
        assert database.write_sync(
            profile_store.apply_plan, GUILD, BEN, version, plan, 1775800000.0
        )
        denver = max(f.id for f in database.read_sync(profile_store.active_facts, GUILD, BEN))
    finally:
        database.close()
    plain = run_cli(capsys, "profile", "--db", str(db), "--guild", str(GUILD), str(BEN))
    assert "Austin" not in plain.out and "Lives in Denver  [stated]" in plain.out
    r = run_cli(capsys, "profile", "--db", str(db), "--guild", str(GUILD), str(BEN), "--all")
    assert r.code == 0
    after = r.out.split("invalidated (1)\n", 1)[1].splitlines()
    assert after[0].startswith("  - Lives in Austin  [")
    assert (
        after[1]
        == f"      invalidated Apr 10: moved to Denver; superseded by #{denver} 'Lives in Denver'"
    )


def test_profile_of_unknown_member_is_empty_with_a_note(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A member with no facts prints nothing on stdout, a note on stderr, and exits 0."""
    r = run_cli(capsys, "profile", "--db", str(imported), "--guild", str(GUILD), "12345")
    assert (r.code, r.out) == (0, "")
    assert "no facts remembered" in r.err


@pytest.mark.parametrize(
    "argv",
    [
        ["profile", "--guild", "123456789012345678901", "ben"],
        ["profile", "--guild", "", "ben"],
        ["profile", "123"],
        ["notes", "--guild", "1", "--since", "2026-02-30"],
        ["notes", "--guild", "1", "--limit", "0"],
        ["notes", "--guild", "1", "--type", "journal"],
        ["notes"],
    ],
)
def test_usage_errors_exit_2(
    imported: Path,
    argv: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A bad id (too long for a Discord id), a blank guild, a bad date, limit or type, or a
    missing --guild, is a usage error."""
    r = run_cli(capsys, *argv, "--db", str(imported))
    assert r.code == 2
    (line,) = r.err.splitlines()
    assert line.startswith("vivy ") and line.endswith("--help)")


@pytest.mark.parametrize("command", [["profile", "--guild", "1", "2"], ["notes", "--guild", "1"]])
def test_missing_database_is_an_error_and_is_not_created(
    tmp_path: Path,
    command: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Reading a database that does not exist fails with exit 1 and leaves no file behind."""
    missing = tmp_path / "missing.db"
    r = run_cli(capsys, *command, "--db", str(missing))
    assert r.code == 1
    assert r.err.strip() == f"vivy {command[0]}: no such database file: {missing}"
    assert not missing.exists()


def test_database_comes_from_vivy_db_when_no_option_is_given(
    imported: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --db the VIVY_DB environment variable names the database."""
    monkeypatch.setenv("VIVY_DB", str(imported))
    r = run_cli(capsys, "notes", "--guild", str(GUILD), "--limit", "1")
    assert r.code == 0 and r.out.startswith("2026-04-07")


def test_notes_lists_newest_first_with_every_field(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Notes show date, channel, kind, title, participants, summary, topics and questions."""
    r = run_cli(
        capsys,
        "notes",
        "--db",
        str(imported),
        "--guild",
        str(GUILD),
        "--type",
        "conversation",
    )
    assert r.code == 0
    blocks = r.out.split("\n\n")
    assert len(blocks) == 5
    heads = [b.splitlines()[0] for b in blocks]
    assert heads[0] == "2026-04-07  #trip-planning  (conversation #5)"
    assert heads[-1] == "2026-04-06  #lounge  (conversation #1)"
    first = blocks[0].splitlines()
    assert first[2] == "  participants: Ana, ben, Cleo"
    assert first[3].startswith("  (offline extract)")
    assert any(line.startswith("  topics: ") for line in first)
    assert "  open question: Ana: let's book for May 20 then?" in first
    tokyo = blocks[3].splitlines()
    assert "  decision: Ana: ok we decided on Tokyo then" in tokyo


def test_notes_filters_by_date_type_and_limit(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--since keeps later dates, --type one kind, --limit the newest N."""
    base = ["notes", "--db", str(imported), "--guild", str(GUILD)]
    since = run_cli(capsys, *base, "--since", "2026-04-07")
    assert [b.splitlines()[0][:10] for b in since.out.split("\n\n")] == ["2026-04-07"] * 2
    clusters = run_cli(capsys, *base, "--type", "topic_cluster")
    assert clusters.out.startswith("2026-04-06  all channels  (topic cluster #6)")
    assert "  from notes: #1, #2, #3" in clusters.out.splitlines()
    limited = run_cli(capsys, *base, "--limit", "2")
    assert len(limited.out.split("\n\n")) == 2


@pytest.mark.parametrize(
    "argv",
    [("notes",), ("profile", str(BEN)), ("search", "tacos"), ("members",)],
    ids=["notes", "profile", "search", "members"],
)
def test_an_unknown_guild_is_an_error(
    imported: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    """A guild the database does not know is one line and exit 2, not "no notes match"."""
    r = run_cli(capsys, argv[0], "--db", str(imported), "--guild", "42", *argv[1:])
    assert (r.code, r.out) == (2, "")
    assert r.err == (
        f"vivy {argv[0]}: guild 42 is not in this database; `vivy guilds` lists the guilds it "
        "remembers\n"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ("notes",),
        ("profile", "ben"),
        ("search", "tacos"),
        ("members",),
        ("ask", "where does ben live?"),
        ("export", "--out", "{out}"),
    ],
    ids=["notes", "profile", "search", "members", "ask", "export"],
)
def test_a_guild_is_found_by_its_name_as_by_its_id(
    imported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    """``--guild`` takes the name ``vivy guilds`` prints (in any letter case) as it takes the
    id: the same output and the same exported file, exit 0."""
    out = tmp_path / "export.json"
    rest = [word.format(out=out) for word in argv[1:]]
    runs = []
    for guild in (str(GUILD), "test GUILD"):
        out.unlink(missing_ok=True)
        with sentence_model():  # the notes were embedded by it; search and ask embed with it
            result = run_cli(capsys, argv[0], "--db", str(imported), "--guild", guild, *rest)
        document = json.loads(out.read_text()) if out.exists() else {}
        document.pop("exported_at", None)  # the time of writing
        runs.append((result, document))
    (by_id, wrote), (by_name, wrote_again) = runs
    assert by_id.code == 0 and by_id.out
    assert (by_name.code, by_name.out, by_name.err) == (by_id.code, by_id.out, by_id.err)
    assert wrote == wrote_again
    assert bool(wrote) == (argv[0] == "export")


def test_a_guild_name_that_is_unknown_blank_or_shared_is_an_error(
    imported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A name no guild has, a blank one, or one two guilds share is one line and exit 2; the
    shared name's line names both guilds, so the id can be passed instead."""
    unknown = run_cli(capsys, "notes", "--db", str(imported), "--guild", "Night Owls")
    assert (unknown.code, unknown.out) == (2, "")
    assert unknown.err == (
        "vivy notes: no guild in this database is named 'Night Owls'; `vivy guilds` lists the "
        "guilds it remembers with their ids and names\n"
    )
    blank = run_cli(capsys, "notes", "--db", str(imported), "--guild", " ")
    assert blank.code == 2 and "the guild is blank" in blank.err
    db = tmp_path / "v.db"
    shutil.copy(imported, db)
    other = GUILD + 1
    database = Database.open(db)
    try:
        database.write_sync(members.upsert_member, other, BEN, "Ben", 1775800000.0)
        database.write_sync(guilds.set_guild_names, [(other, "Test Guild")], 1775800000.0)
    finally:
        database.close()
    shared = run_cli(capsys, "members", "--db", str(db), "--guild", "Test Guild")
    assert (shared.code, shared.out) == (2, "")
    assert shared.err == (
        f"vivy members: 'Test Guild' names more than one guild (Test Guild ({GUILD}), Test "
        f"Guild ({other})); pass the id\n"
    )
    assert run_cli(capsys, "members", "--db", str(db), "--guild", str(other)).code == 0


def test_notes_since_a_later_day_print_nothing(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A known guild without matching notes exits 0 with empty stdout and a note on stderr."""
    argv = ("notes", "--db", str(imported), "--guild", str(GUILD), "--since", "2030-01-01")
    r = run_cli(capsys, *argv)
    assert (r.code, r.out) == (0, "")
    assert r.err.strip() == f"no notes in Test Guild ({GUILD}) match"


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    """Every operator command documents itself under --help."""
    for argv in (
        ["profile", "--help"],
        ["notes", "--help"],
        ["import", "--help"],
        ["db", "--help"],
        ["db", "check", "--help"],
        ["db", "backup", "--help"],
        ["migrate-v1", "--help"],
        ["reembed", "--help"],
    ):
        r = run_cli(capsys, *argv)
        assert r.code == 0, argv
        assert r.out.startswith(f"usage: vivy {' '.join(argv[:-1])}"), argv


def test_cleo_profile_is_separate_from_ben(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each member's profile holds only their own statements."""
    r = run_cli(capsys, "profile", "--db", str(imported), "--guild", str(GUILD), str(CLEO))
    assert "bakery" in r.out and "Lives in Austin" not in r.out
