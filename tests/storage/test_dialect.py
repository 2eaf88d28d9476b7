"""The dialects: a statement written once in SQLite's spelling, as each engine takes it."""

from __future__ import annotations

import pytest

from vivy.storage.postgres.dialect import POSTGRES
from vivy.storage.sqlite.dialect import SQLITE


@pytest.mark.parametrize(
    ("written", "psycopg"),
    [
        ("SELECT id FROM t WHERE a = ? AND b = ?", "SELECT id FROM t WHERE a = %s AND b = %s"),
        ("SELECT :g, :user_id", "SELECT %(g)s, %(user_id)s"),
        ("SELECT (guild_id >> 22) % ?", "SELECT (guild_id >> 22) %% %s"),
        ("SELECT ?::vector, x::text", "SELECT %s::vector, x::text"),
        ("SELECT 'a ? b :c %', ?", "SELECT 'a ? b :c %', %s"),
        ("SELECT 'it''s ?' || ?", "SELECT 'it''s ?' || %s"),
    ],
)
def test_postgresql_takes_psycopg_placeholders_and_sqlite_its_own(
    written: str, psycopg: str
) -> None:
    """Placeholders outside string literals become psycopg's, ``%`` is escaped and casts
    stay; SQLite runs the statement as written."""
    assert POSTGRES.sql(written) == psycopg
    assert SQLITE.sql(written) == written


def test_a_list_is_one_array_on_postgresql_and_one_placeholder_each_on_sqlite() -> None:
    """``Dialect.any`` spells membership of a list each engine's way, with its parameters."""
    assert POSTGRES.any("id", (1, 2, 3)) == ("id = ANY(?)", [[1, 2, 3]])
    assert SQLITE.any("id", (1, 2, 3)) == ("id IN (?,?,?)", [1, 2, 3])
