"""Synthetic notes written straight into the tables, for ``vivy bench retrieval``.

One guild with N notes, inserted with plain SQL in one transaction: ``interaction_notes``
rows (the FTS5 index filled by its trigger) with synthetic titles, summaries, topics and
entities drawn from a Zipf-distributed vocabulary, their participants, and ``vec_notes``
rows. One note in ten is a topic cluster.

Vectors are synthetic but clustered, so nearest neighbours mean something: each note is
``normalise(topic + 0.7 * subtopic + 0.5 * noise)`` over pools of random unit vectors (a
topic per 20 notes, 512 subtopics, 512 noises), computed inside SQLite (``vec_add``,
``vec_normalize``) to keep the 100k fill fast. Every conversation note keeps six lines of ten
words as evidence, in two windows (``evidence_windows``, ``evidence_fts``), each embedded as
its note's vector plus one more noise. A query is ``normalise(v + 0.8 * u)`` for a random
stored note ``v`` and a fresh random unit ``u`` (cosine 0.78 to its note, about what a good
embedding model gives a question and its answer), with three words of that note plus one
random word as its text. The keyword indexes are then merged as the nightly job merges a
deployment's (:func:`vivy.storage.fts.merge_step`).
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from vivy.memory.evidence import windows_of
from vivy.storage.db import Connection, connect, migrate
from vivy.storage.fts import merge_step
from vivy.storage.schema import binary_dimensions, serialize_vector
from vivy.storage.search import vector_search
from vivy.storage.vector_index import BinaryIndex

__all__ = ["DIMENSION", "EXACT_QUERIES", "GUILD_ID", "WALL0", "build", "quantised_recall"]

#: Queries whose recall is measured against an exact scan of every vector of the guild.
EXACT_QUERIES = 30

GUILD_ID = 4242
DIMENSION = 768
#: 2026-03-02T00:00:00Z: notes spread over the year before it.
WALL0 = 1772409600.0
POOL = 512
#: Notes per topic vector, so that every size has real neighbourhoods of about this size.
NOTES_PER_TOPIC = 20
VOCABULARY = 6000
CHANNELS = 40
MEMBERS = 200

_SYLLABLES = [
    c + v
    for c in ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "ch", "sh")
    for v in ("a", "e", "i", "o", "u", "ai", "ou")
]


def build(
    path: Path, size: int, queries: int, seed: int
) -> tuple[float, list[tuple[list[float], str]]]:
    """Create the database at ``path`` with ``size`` notes; returns the fill's seconds and
    ``queries`` (query vector, query text) pairs near random stored notes."""
    rng = random.Random(f"{seed}:{size}")
    words = _vocabulary(rng)
    conn = connect(path)
    try:
        migrate(conn)
        started = time.perf_counter()
        _fill(conn, size, rng, words)
        fill_s = time.perf_counter() - started
        while merge_step(conn):  # as the nightly job leaves a deployment's indexes
            pass
        return fill_s, _queries(conn, size, queries, rng, words)
    finally:
        conn.close()


def quantised_recall(
    path: Path, workload: Sequence[tuple[list[float], str]], *, candidates: int
) -> tuple[list[float], list[float]]:
    """Per query, the seconds of the vector search alone (binary KNN and exact re-rank), and
    for the first :data:`EXACT_QUERIES` the share of an exact float KNN's top 10 it finds."""
    conn = connect(path)
    try:
        index = BinaryIndex()
        timings: list[float] = []
        recalls: list[float] = []
        for floats, _ in workload:
            vector = serialize_vector(floats)
            started = time.perf_counter()
            approximate = vector_search(
                conn, index, GUILD_ID, vector, note_type=None, limit=10, candidates=candidates
            )
            timings.append(time.perf_counter() - started)
            if len(recalls) == EXACT_QUERIES:
                continue  # an exact scan of 100k vectors takes most of a second
            exact = conn.execute(
                "SELECT note_id FROM vec_notes WHERE guild_id = ?"
                " ORDER BY vec_distance_cosine(embedding, ?), note_id LIMIT 10",
                (GUILD_ID, vector),
            ).fetchall()
            truth = {int(row[0]) for row in exact}
            recalls.append(len(truth & {m.note_id for m in approximate}) / max(1, len(truth)))
        return timings, recalls
    finally:
        conn.close()


def _vocabulary(rng: random.Random) -> list[str]:
    """Distinct made-up words, two to four syllables each."""
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < VOCABULARY:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def _unit(rng: random.Random, scale: float) -> list[float]:
    """A random direction of length ``scale``."""
    values = [rng.gauss(0.0, 1.0) for _ in range(DIMENSION)]
    norm = math.sqrt(math.fsum(v * v for v in values))
    return [scale * v / norm for v in values]


def _fill(conn: Connection, size: int, rng: random.Random, words: list[str]) -> None:
    """Insert ``size`` notes of one guild with their participants, FTS rows and vectors."""
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    cumulative: list[float] = []
    total = 0.0
    for weight in weights:
        total += weight
        cumulative.append(total)

    def draw(count: int) -> list[str]:
        return rng.choices(words, cum_weights=cumulative, k=count)

    conn.execute("BEGIN")
    conn.execute("CREATE TEMP TABLE bench_pool (kind INTEGER, i INTEGER, v BLOB)")
    conn.execute("CREATE UNIQUE INDEX temp.bench_pool_key ON bench_pool (kind, i)")
    topics = max(8, size // NOTES_PER_TOPIC)
    conn.executemany(
        "INSERT INTO bench_pool VALUES (?, ?, ?)",
        [
            (kind, i, serialize_vector(_unit(rng, scale)))
            for kind, scale, count in ((0, 1.0, topics), (1, 0.7, POOL), (2, 0.5, POOL))
            for i in range(count)
        ],
    )
    notes = []
    participants = []
    picks = []
    for note_id in range(1, size + 1):
        at = WALL0 - rng.random() * 365 * 86400.0
        day = time.strftime("%Y-%m-%d", time.gmtime(at))
        cluster = note_id % 10 == 0
        channel = rng.randrange(CHANNELS)
        title = " ".join(draw(4)).capitalize()
        summary = " ".join(draw(45)).capitalize() + "."
        members = rng.sample(range(MEMBERS), 2)
        notes.append(
            (
                note_id,
                GUILD_ID,
                1000 + channel,
                f"channel-{channel}",
                "topic_cluster" if cluster else "conversation",
                json.dumps([str(1_000_000 + m) for m in members]),
                title,
                summary,
                json.dumps(draw(3)),
                json.dumps([w.capitalize() for w in draw(2)]),
                day,
                "bench",
                at,
                at - 3600.0,
                at,
            )
        )
        participants += [(note_id, 1_000_000 + m, f"member-{m}", 3) for m in members]
        picks.append((note_id, rng.randrange(topics), rng.randrange(POOL), rng.randrange(POOL)))
    conn.executemany(
        "INSERT INTO interaction_notes (id, guild_id, channel_id, channel_name, note_type,"
        " participants, title, summary, topics, entities, note_date, quality, created_at,"
        " started_at, ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        notes,
    )
    conn.executemany(
        "INSERT INTO note_participants (note_id, user_id, display_name, message_count)"
        " VALUES (?, ?, ?, ?)",
        participants,
    )
    conn.execute("CREATE TEMP TABLE bench_picks (id INTEGER PRIMARY KEY, a, b, n)")
    conn.executemany("INSERT INTO bench_picks VALUES (?, ?, ?, ?)", picks)
    conn.execute(
        "INSERT INTO vec_notes (note_id, guild_id, note_kind, embedding, embedding_bits)"
        " SELECT id, ?, CASE note_type WHEN 'topic_cluster' THEN 'cluster' ELSE 'conv' END,"
        " v, vec_quantize_binary(vec_slice(v, 0, ?)) FROM ("
        "  SELECT p.id, n.note_type,"
        "   vec_normalize(vec_add(vec_add(a.v, b.v), x.v)) AS v FROM bench_picks AS p"
        "  JOIN interaction_notes AS n ON n.id = p.id"
        "  JOIN bench_pool AS a ON a.kind = 0 AND a.i = p.a"
        "  JOIN bench_pool AS b ON b.kind = 1 AND b.i = p.b"
        "  JOIN bench_pool AS x ON x.kind = 2 AND x.i = p.n)",
        (GUILD_ID, binary_dimensions(DIMENSION)),
    )
    _fill_evidence(conn, size, rng, draw)
    conn.execute("DROP TABLE bench_picks")
    conn.execute("DROP TABLE bench_pool")
    conn.execute("COMMIT")


#: Kept messages per conversation note in the benchmark (two evidence windows each).
LINES_PER_NOTE = 6


def _fill_evidence(
    conn: Connection, size: int, rng: random.Random, draw: Callable[[int], list[str]]
) -> None:
    """Give every conversation note its kept lines and evidence windows, each window's
    vector its note's plus noise (cosine about 0.9 to the note)."""
    lines = []
    windows = []
    picks = []
    window_id = 0
    for note_id in range(1, size + 1):
        if note_id % 10 == 0:
            continue  # topic clusters have no evidence
        rows = [
            (note_id * 100 + i, f"member-{rng.randrange(MEMBERS)}", " ".join(draw(10)))
            for i in range(LINES_PER_NOTE)
        ]
        lines += [(m, note_id, 7, name, text, WALL0) for m, name, text in rows]
        for window in windows_of(rows):
            window_id += 1
            windows.append(
                (
                    window_id,
                    note_id,
                    GUILD_ID,
                    window.first_message_id,
                    window.last_message_id,
                    window.text,
                )
            )
            picks.append((window_id, note_id, rng.randrange(POOL)))
    conn.executemany(
        "INSERT INTO note_lines (message_id, note_id, author_id, author_name, text, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        lines,
    )
    conn.executemany(
        "INSERT INTO evidence_windows (id, note_id, guild_id, first_message_id,"
        " last_message_id, text) VALUES (?, ?, ?, ?, ?, ?)",
        windows,
    )
    conn.execute("CREATE TEMP TABLE bench_windows (id INTEGER PRIMARY KEY, note, n)")
    conn.executemany("INSERT INTO bench_windows VALUES (?, ?, ?)", picks)
    conn.execute(
        "UPDATE evidence_windows SET embedding = ("
        " SELECT vec_normalize(vec_add(vec_add(a.v, b.v), vec_add(x.v, y.v)))"
        " FROM bench_windows AS w JOIN bench_picks AS p ON p.id = w.note"
        " JOIN bench_pool AS a ON a.kind = 0 AND a.i = p.a"
        " JOIN bench_pool AS b ON b.kind = 1 AND b.i = p.b"
        " JOIN bench_pool AS x ON x.kind = 2 AND x.i = p.n"
        " JOIN bench_pool AS y ON y.kind = 2 AND y.i = w.n"
        " WHERE w.id = evidence_windows.id)"
    )
    conn.execute("DROP TABLE bench_windows")


def _queries(
    conn: Connection, size: int, count: int, rng: random.Random, words: list[str]
) -> list[tuple[list[float], str]]:
    """``count`` (query vector, query text) pairs, each near a random stored note."""
    found: list[tuple[list[float], str]] = []
    for _ in range(count):
        note_id = rng.randrange(1, size + 1)
        blob, title, summary = conn.execute(
            "SELECT v.embedding, n.title, n.summary FROM vec_notes AS v"
            " JOIN interaction_notes AS n ON n.id = v.note_id WHERE v.note_id = ?",
            (note_id,),
        ).fetchone()
        stored = _floats(blob)
        noise = _unit(rng, 0.8)
        mixed = [a + b for a, b in zip(stored, noise, strict=True)]
        norm = math.sqrt(math.fsum(v * v for v in mixed))
        note_words = f"{title} {summary}".lower().rstrip(".").split()
        text = " ".join([*rng.sample(note_words, 3), rng.choice(words)])
        found.append(([v / norm for v in mixed], text))
    return found


def _floats(blob: bytes) -> list[float]:
    """A float32 blob as floats."""
    import array

    values = array.array("f")
    values.frombytes(blob)
    return list(values)
