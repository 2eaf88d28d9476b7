"""Names beside ids on SQLite and on the embedded PostgreSQL: the guild's name from its export
in ``vivy guilds`` and snapshots, ``vivy members``, and members named by name."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.importer import ANA, BEN, CLEO, GUILD, TWO_DAYS
from tests.pg import ENGINES, pg_url
from vivy.cli import EXIT_USAGE
from vivy.storage.engines import open_store, target_of

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


def test_guilds_and_snapshots_show_the_exports_name(
    imported: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The export's guild name is stored and shown beside the id."""
    header, row = run_cli(capsys, "guilds", "--db", imported).out.splitlines()
    assert header.split() == ["guild", "notes", "members", "messages", "name"]
    assert row.startswith(str(GUILD)) and row.endswith("  Test Guild")
    out = tmp_path / "snapshots"
    assert run_cli(capsys, "snapshot", "--out", str(out), "--db", imported).code == 0
    first = (out / f"guild-{GUILD}.md").read_text(encoding="utf-8").splitlines()[0]
    assert first == f"# Vivy memory snapshot — Test Guild ({GUILD})"


def test_members_lists_ids_names_and_fact_counts(
    imported: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``vivy members`` lists each member with their id, fact counts and name."""
    result = run_cli(capsys, "members", "--guild", str(GUILD), "--db", imported)
    assert result.code == 0, result.err
    title, header, *rows = result.out.splitlines()
    assert title == f"3 members of Test Guild ({GUILD})"
    assert header.split() == ["member", "facts", "retired", "name"]
    listed = {int(row.split()[0]): (row.split()[1], row.split()[-1]) for row in rows}
    assert listed == {ANA: ("0", "Ana"), BEN: ("3", "ben"), CLEO: ("2", "Cleo")}


def test_a_member_is_named_by_id_or_unambiguous_name(
    imported: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``vivy profile`` takes a display name or a name the member went by (any case); a name
    two members went by is refused with their ids."""
    by_name = run_cli(capsys, "profile", "--guild", str(GUILD), "BEN", "--db", imported)
    by_id = run_cli(capsys, "profile", "--guild", str(GUILD), str(BEN), "--db", imported)
    assert by_name.code == 0 and by_name.out == by_id.out != ""
    store = open_store(target_of(imported), inline=True)
    try:
        aliases = [(BEN, "Trip Crew"), (CLEO, "trip crew")]
        anyio.run(store.members.add_member_names, GUILD, aliases)
    finally:
        store.close()
    both = run_cli(capsys, "profile", "--guild", str(GUILD), "trip crew", "--db", imported)
    assert both.code == EXIT_USAGE
    assert both.err == (
        f"vivy profile: 'trip crew' is more than one member (ben ({BEN}), Cleo ({CLEO})); "
        "pass the id\n"
    )
