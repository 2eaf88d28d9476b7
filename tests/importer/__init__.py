"""Helpers shared by the importer and command tests: fixture exports and table snapshots."""

from __future__ import annotations

import hashlib
from pathlib import Path

from vivy.config import Settings
from vivy.importer import ImportReport, import_exports
from vivy.llm.offline import OfflineLLM
from vivy.storage.sqlite.checks import open_readonly

FIXTURES = Path(__file__).parent / "fixtures"
TWO_DAYS = FIXTURES / "two_days.json"
THREAD_LATER = FIXTURES / "thread_later.json"

GUILD = 900000000000000001
LOUNGE = 910000000000000001
THREAD = 910000000000000002
ANA = 800000000000000001
BEN = 800000000000000002
CLEO = 800000000000000003
BOT = 800000000000000099


def import_files(db: Path, *paths: Path) -> ImportReport:
    """Import ``paths`` into ``db`` with default settings and the offline provider."""
    return import_exports(list(paths), Settings(), llm=OfflineLLM(), database=db)


def snapshot(db: Path) -> dict[str, tuple[int, str]]:
    """Every stored table's row count and a checksum of its rows (virtual tables through
    their shadow tables)."""
    conn = open_readonly(db)
    try:
        tables = [
            str(r[0])
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
                " AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name"
            )
        ]
        found = {}
        for table in tables:
            rows = sorted(repr(tuple(r)) for r in conn.execute(f'SELECT * FROM "{table}"'))
            digest = hashlib.sha256("\n".join(rows).encode()).hexdigest()
            found[table] = (len(rows), digest)
        return found
    finally:
        conn.close()
