"""Time each part of one note search on one thread, at one size of ``vivy bench retrieval``.

``vivy bench retrieval`` times whole searches, with the keyword searches on side threads;
this script runs the same parts one after another on one connection, so that each part's
cost can be read apart, and takes for every query the fastest of ``--passes`` runs (the
machine is shared: the minimum is the least disturbed run). The database is the
benchmark's synthetic one (:mod:`vivy_lab.synthetic.sqlite`), built once into ``--db-dir`` and
reused by later runs with the same size and seed.

Usage::

    python scripts/retrieval_parts.py --size 100000 --db-dir /tmp/vivy-parts

Each line is ``part: milliseconds`` (the median over queries of each query's fastest run).
It reads the real clock (``time.perf_counter``); Vivy itself reads time from its Clock.
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from vivy.memory.evidence import EvidenceLine, ScoredLine
from vivy.retrieval.lines import WordVectors, best_lines, local_word_vectors, word_matches
from vivy.retrieval.query import name_grams
from vivy.retrieval.ranking import GEMINI_CALIBRATION, rank
from vivy.retrieval.settings import DEFAULT_SETTINGS
from vivy.storage import notes as note_reads
from vivy.storage.search_types import NoteSearch, NoteSearchResult
from vivy.storage.sqlite import search as note_search
from vivy.storage.sqlite.db import connect
from vivy.storage.sqlite.dialect import sqlite_tx
from vivy.storage.sqlite.schema import serialize_vector
from vivy.storage.vector_index import BinaryIndex
from vivy.text.terms import query_terms
from vivy_lab.synthetic.sqlite import GUILD_ID, WALL0, build

T = TypeVar("T")


def _workload(db_dir: Path, size: int, seed: int) -> tuple[Path, list[tuple[list[float], str]]]:
    """The benchmark's database and queries for ``size``, built on first use (``db_dir``
    made if missing)."""
    path = db_dir / f"parts-{size}-{seed}.db"
    queries = db_dir / f"parts-{size}-{seed}.queries"
    if not queries.exists():
        db_dir.mkdir(parents=True, exist_ok=True)
        for stale in db_dir.glob(path.name + "*"):
            stale.unlink()
        _, workload = build(path, size, 200, seed)
        queries.write_bytes(pickle.dumps(workload))
    loaded: list[tuple[list[float], str]] = pickle.loads(queries.read_bytes())
    return path, loaded


def _quoted(
    found: NoteSearchResult,
    terms: Sequence[str],
    lines: Mapping[int, Sequence[EvidenceLine]],
    chosen: Sequence[int],
    words: WordVectors,
) -> list[tuple[ScoredLine, ...]]:
    """The lines each chosen note would quote, as :func:`ranked_notes` picks them."""
    return best_lines(
        [lines.get(note_id, ()) for note_id in chosen],
        terms,
        found.term_weights,
        words,
        DEFAULT_SETTINGS.evidence_lines,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Print each part's time; returns the exit code."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--db-dir", type=Path, required=True)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    path, workload = _workload(args.db_dir, args.size, args.seed)
    conn = connect(path)
    index = BinaryIndex(note_search.SQLITE_VECTORS)
    words = local_word_vectors()
    fastest: dict[str, list[float]] = {}

    def timed(query: int, part: str, fn: Callable[..., T], *fn_args: Any, **kwargs: Any) -> T:
        started = time.perf_counter()
        result = fn(*fn_args, **kwargs)
        spent = time.perf_counter() - started
        best = fastest.setdefault(part, [float("inf")] * len(workload))
        best[query] = min(best[query], spent)
        return result

    for _ in range(args.passes):
        for query, (vector, text) in enumerate(workload):
            search = NoteSearch(
                GUILD_ID,
                vector,
                tuple(query_terms(text)),
                None,
                candidates=DEFAULT_SETTINGS.candidates,
                keyword_candidates=DEFAULT_SETTINGS.keyword_candidates,
                window_candidates=DEFAULT_SETTINGS.window_candidates,
                name_grams=tuple(name_grams(text)),
            )
            found = timed(
                query,
                "find: every part on one thread",
                note_search.search_notes_sync,
                conn,
                index,
                search,
            )
            timed(
                query,
                "  vector search (binary KNN, exact re-rank)",
                note_search.vector_search,
                conn,
                index,
                GUILD_ID,
                serialize_vector(vector),
                note_type=None,
                limit=DEFAULT_SETTINGS.candidates,
                candidates=DEFAULT_SETTINGS.candidates,
            )
            reads = note_search._SqliteReads(index, serialize_vector(vector), {})
            timed(query, "  notes' BM25 (plan, search)", reads.note_keywords, conn, search)
            timed(query, "  evidence BM25 (plan, search)", reads.window_keywords, conn, search)
            timed(
                query,
                "  candidates' details and window similarities",
                reads._read_notes,
                conn,
                search,
                [c.note_id for c in found.candidates],
                True,
            )
            matches = timed(
                query,
                "word match of the candidates (word vectors)",
                word_matches,
                found.candidates,
                search.terms,
                found.term_weights,
                words,
            )
            ranked = timed(
                query,
                "rank",
                rank,
                found.candidates,
                now=WALL0,
                channel_id=1000,
                calibration=GEMINI_CALIBRATION,
                weights=DEFAULT_SETTINGS.weights,
                gate=DEFAULT_SETTINGS.gate,
                limit=10,
                term_weights=found.term_weights,
                word_match=matches,
            )
            chosen = [one.note_id for one in ranked]
            _, lines = timed(
                query,
                "chosen notes and their lines",
                note_reads.note_hits,
                sqlite_tx(conn),
                GUILD_ID,
                chosen,
                chosen,
            )
            timed(
                query,
                "quoted lines (word vectors, instruction guard)",
                _quoted,
                found,
                search.terms,
                lines,
                chosen[: DEFAULT_SETTINGS.conversation_notes],
                words,
            )
    conn.close()
    for part, times in fastest.items():
        print(f"{part}: {statistics.median(times) * 1000:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
