"""A replay's results depend on the export and the model's answers, never on model latency."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from pathlib import Path

from vivy.config import Settings
from vivy.importer import ImportReport, RealTimeLLM, import_exports
from vivy.llm.offline import OfflineLLM
from vivy.llm.port import EmbeddingTask, Generation, GenerationRequest, T
from vivy.storage.sqlite.checks import open_readonly

DEMO = Path(__file__).parents[2] / "vivy" / "data" / "demo_export.json"

#: The tables whose every row and column must come out the same.
COMPARED = (
    "interaction_notes",
    "note_participants",
    "note_lines",
    "profile_updates",
    "memory_job_log",
)


class Jittery(OfflineLLM):
    """The offline provider (deterministic answers) with random real-time latency."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        self._rng = random.Random(seed)

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """Answer after 0–20 ms, as a network model would."""
        await asyncio.sleep(self._rng.uniform(0.0, 0.02))
        return await super().generate(request)

    async def embed(self, texts: Sequence[str], task: EmbeddingTask) -> list[list[float]]:
        """Embed after 0–20 ms."""
        await asyncio.sleep(self._rng.uniform(0.0, 0.02))
        return await super().embed(texts, task)


def run(db: Path, seed: int) -> ImportReport:
    """Import the demo export with four calls in flight and latency drawn from ``seed``."""
    return import_exports(
        [DEMO],
        Settings(),
        llm=lambda: RealTimeLLM(lambda: Jittery(seed)),
        database=db,
        concurrency=4,
    )


def dump(db: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the compared tables, and every column of the profile facts but their id."""
    conn = open_readonly(db)
    try:
        found = {
            table: sorted(tuple(r) for r in conn.execute(f'SELECT * FROM "{table}"'))
            for table in COMPARED
        }
        # Fact row ids follow the order in which different members' updates commit; the
        # fact a merge points to is compared by its text instead.
        found["profile_facts"] = sorted(
            tuple(r)
            for r in conn.execute(
                "SELECT f.guild_id, f.user_id, f.section, f.text, f.source_kind,"
                " f.source_note_id, f.source_label, f.created_at, f.invalidated_at,"
                " f.invalidation_reason, s.text FROM profile_facts f"
                " LEFT JOIN profile_facts s ON s.id = f.superseded_by"
            )
        )
        return found
    finally:
        conn.close()


def test_two_imports_of_one_export_are_identical(tmp_path: Path) -> None:
    """Notes, participants, evidence, profile updates, facts and every timestamp match."""
    first = run(tmp_path / "a.db", seed=1)
    second = run(tmp_path / "b.db", seed=2)
    assert first.complete and second.complete
    assert first.calls_in_flight_max > 1  # the calls really overlapped
    assert first.notes_written == second.notes_written > 10
    a, b = dump(tmp_path / "a.db"), dump(tmp_path / "b.db")
    assert a["profile_facts"], "the replay should have extracted facts"
    for table in a:
        assert a[table] == b[table], table
