"""``vivy import`` into PostgreSQL through a partition: it rides it out, or ends in one line
naming the server, and a re-run completes with nothing lost or doubled.

The partition is the loopback fault proxy (``tests/faultproxy.py``) black-holing the import's
connection a third of the way through the export; the proxy heals when the import reports
the database unavailable. The time-out is one second, so a call cut off from the server ends
at its deadline (11 s) rather than the default 40 s. Real time runs (a socket must be cut);
nothing is asserted about how long anything took.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest
from structlog.testing import capture_logs

from tests.faultproxy import FaultProxy, through
from tests.pg import embedded_postgres
from vivy.config import Settings
from vivy.errors import StorageError
from vivy.importer import ImportProgress, import_exports
from vivy.llm.offline import OfflineLLM
from vivy.storage.postgres.connect import DEFAULT_TIMEOUT_S, set_timeout
from vivy.storage.postgres.db import PgDatabase

DEMO = Path(__file__).parents[2] / "vivy" / "data" / "demo_export.json"

pytestmark = pytest.mark.skipif(
    embedded_postgres is None, reason="embedded_postgres is not installed"
)


@pytest.fixture
def short_timeout() -> Iterator[None]:
    """A one-second time-out for the test, the default after it."""
    set_timeout(1)
    yield
    set_timeout(DEFAULT_TIMEOUT_S)


def healer(proxy: FaultProxy) -> Any:
    """A log processor that heals the partition once the import reports it."""

    def heal(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        if event.get("event") == "database unavailable; retrying":
            proxy.heal()
        return event

    return heal


def test_an_import_cut_off_mid_way_rides_it_out_or_ends_in_one_line(
    tmp_path: Path, pg_uri: str, short_timeout: None
) -> None:
    """Black-holed a third of the way through, the import either finishes once the network
    heals or fails with one line naming the server; either way a re-run finds every message
    stored and no conversation noted twice."""
    PgDatabase.open(pg_uri).close()
    with through(pg_uri) as (proxy, proxied):
        settings = replace(Settings(), database=tmp_path / "unused.db", database_url=proxied)

        def cut(progress: ImportProgress) -> None:
            if progress.phase == "replaying" and progress.seen == progress.total // 3:
                proxy.black_hole()

        failure: StorageError | None = None
        with capture_logs(processors=[healer(proxy)]) as logs:
            try:
                import_exports([DEMO], settings, llm=OfflineLLM, progress=cut)
            except StorageError as exc:
                failure = exc
        proxy.heal()
        rode_out = any(e["event"] == "database unavailable; retrying" for e in logs)
        assert rode_out or failure is not None
        if failure is not None:
            [line] = str(failure).splitlines()
            assert f"127.0.0.1:{proxy.port}" in line
        again = import_exports([DEMO], settings, llm=OfflineLLM)
    assert again.duplicates == again.messages > 0
    with psycopg.connect(pg_uri) as conn:
        row = conn.execute(
            "SELECT COUNT(*) - COUNT(DISTINCT (channel_id, started_at)) FROM interaction_notes"
            " WHERE note_type = 'conversation'"
        ).fetchone()
    assert row == (0,)
