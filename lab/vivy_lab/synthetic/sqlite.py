"""Synthetic notes written straight into the tables, for ``vivy bench retrieval``.

One guild with N notes, inserted with plain SQL in one transaction: ``interaction_notes``
rows (the FTS5 index filled by its trigger) with synthetic titles, summaries, topics and
entities drawn from a Zipf-distributed vocabulary, their participants, and ``vec_notes``
rows. One note in ten is a topic cluster.

Vectors are made from real ones, so that nearest neighbours behave as with a deployment's
embeddings: the process's local embedding model (``provider.shared_embedder``) embeds every
message of the bundled long-conversation eval set (about 5,000 lines of chat from 163
conversations), and each note's vector is the normalised mean of four to eight random
messages of one random conversation, so notes come in topical clusters of real chat with
the anisotropy and spread real sentence embeddings have. Every conversation note keeps six
lines of ten words as evidence, in two windows (``evidence_windows``, ``evidence_fts``),
each embedded as the mean of its note's vector and one more message of the same
conversation. A query is the vector of one message of a random conversation (a short line of
chat, as a question is), with three words of a random stored note plus one random word as
its text. The keyword indexes are then merged as the nightly job merges a deployment's
(:func:`vivy.storage.sqlite.fts.merge_step`).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt

from vivy.llm.offline import provider
from vivy.llm.offline.embeddings import LOCAL_EMBEDDING_DIMENSION
from vivy.memory.evidence import windows_of
from vivy.storage.sqlite.db import Connection, connect, migrate
from vivy.storage.sqlite.fts import merge_step
from vivy.storage.sqlite.schema import serialize_vector
from vivy.storage.sqlite.search import SQLITE_VECTORS, vector_search
from vivy.storage.vector_index import BinaryIndex
from vivy.storage.vectors import binary_dimensions

__all__ = ["DIMENSION", "EXACT_QUERIES", "GUILD_ID", "WALL0", "build", "quantised_recall"]

#: Queries whose recall is measured against an exact scan of every vector of the guild.
EXACT_QUERIES = 30

GUILD_ID = 4242
#: The local embedding model's dimension, which the vectors come from.
DIMENSION = LOCAL_EMBEDDING_DIMENSION
#: 2026-03-02T00:00:00Z: notes spread over the year before it.
WALL0 = 1772409600.0
#: Messages of one conversation whose vectors' mean is a note's vector (inclusive range).
MESSAGES_PER_NOTE = (4, 8)
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
        index = BinaryIndex(SQLITE_VECTORS)
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


@cache
def _real_vectors() -> tuple[npt.NDArray[np.float32], tuple[npt.NDArray[np.int64], ...]]:
    """The local model's vectors of every message of the bundled long-conversation eval set,
    and each conversation's rows among them."""
    raw = json.loads(
        resources.files("vivy_lab.data").joinpath("longconv_eval.json").read_text(encoding="utf-8")
    )
    texts: list[str] = []
    sessions: list[npt.NDArray[np.int64]] = []
    for guild in raw["guilds"]:
        for session in guild["sessions"]:
            lines = [m["text"] for m in session["messages"] if m["text"].strip()]
            sessions.append(np.arange(len(texts), len(texts) + len(lines), dtype=np.int64))
            texts += lines
    return provider.shared_embedder().embed_array(texts), tuple(sessions)


def _mean_vector(rows: npt.NDArray[np.float32]) -> bytes:
    """The float32 blob of the normalised mean of ``rows``."""
    mean = rows.mean(axis=0)
    return serialize_vector((mean / np.linalg.norm(mean)).tolist())


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

    vectors, sessions = _real_vectors()
    numbers = np.random.default_rng(rng.getrandbits(64))
    conn.execute("BEGIN")
    notes = []
    participants = []
    picks: list[tuple[int, str, bytes]] = []
    sources: list[npt.NDArray[np.int64]] = []
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
        session = sessions[rng.randrange(len(sessions))]
        count = min(len(session), rng.randint(*MESSAGES_PER_NOTE))
        rows = numbers.choice(session, size=count, replace=False)
        picks.append((note_id, "cluster" if cluster else "conv", _mean_vector(vectors[rows])))
        sources.append(session)
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
    conn.executemany(
        "INSERT INTO vec_notes (note_id, guild_id, note_kind, embedding, embedding_bits)"
        " VALUES (?, ?, ?, ?, vec_quantize_binary(vec_slice(?, 0, ?)))",
        [
            (note_id, GUILD_ID, kind, blob, blob, binary_dimensions(DIMENSION))
            for note_id, kind, blob in picks
        ],
    )
    _fill_evidence(conn, rng, draw, picks, sources, numbers)
    conn.execute("COMMIT")


#: Kept messages per conversation note in the benchmark (two evidence windows each).
LINES_PER_NOTE = 6


def _fill_evidence(
    conn: Connection,
    rng: random.Random,
    draw: Callable[[int], list[str]],
    picks: Sequence[tuple[int, str, bytes]],
    sources: Sequence[npt.NDArray[np.int64]],
    numbers: np.random.Generator,
) -> None:
    """Give every conversation note its kept lines and evidence windows, each window's
    vector the mean of its note's and one more message of the note's conversation."""
    vectors, _ = _real_vectors()
    lines = []
    windows = []
    for (note_id, kind, blob), session in zip(picks, sources, strict=True):
        if kind != "conv":
            continue  # topic clusters have no evidence
        note = np.frombuffer(blob, dtype=np.float32)
        rows = [
            (note_id * 100 + i, f"member-{rng.randrange(MEMBERS)}", " ".join(draw(10)))
            for i in range(LINES_PER_NOTE)
        ]
        lines += [(m, note_id, 7, name, text, WALL0) for m, name, text in rows]
        for window in windows_of(rows):
            extra = vectors[int(numbers.choice(session))]
            windows.append(
                (
                    note_id,
                    GUILD_ID,
                    window.first_message_id,
                    window.last_message_id,
                    window.text,
                    _mean_vector(np.stack([note, extra])),
                )
            )
    conn.executemany(
        "INSERT INTO note_lines (message_id, note_id, author_id, author_name, text, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        lines,
    )
    conn.executemany(
        "INSERT INTO evidence_windows (note_id, guild_id, first_message_id,"
        " last_message_id, text, embedding) VALUES (?, ?, ?, ?, ?, ?)",
        windows,
    )


def _queries(
    conn: Connection, size: int, count: int, rng: random.Random, words: list[str]
) -> list[tuple[list[float], str]]:
    """``count`` (query vector, query text) pairs: a real message's vector, and words of a
    random stored note."""
    vectors, _ = _real_vectors()
    found: list[tuple[list[float], str]] = []
    for _ in range(count):
        note_id = rng.randrange(1, size + 1)
        title, summary = conn.execute(
            "SELECT title, summary FROM interaction_notes WHERE id = ?", (note_id,)
        ).fetchone()
        note_words = f"{title} {summary}".lower().rstrip(".").split()
        text = " ".join([*rng.sample(note_words, 3), rng.choice(words)])
        vector = vectors[rng.randrange(len(vectors))]
        found.append((vector.tolist(), text))
    return found
