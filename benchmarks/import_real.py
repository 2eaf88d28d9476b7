"""Offline import speed on real conversations: the dev set's conversations written as exports
and imported by ``vivy import``'s own code with the offline provider.

    OPENBLAS_NUM_THREADS=1 python benchmarks/import_real.py [--conversations 5] [--dev-data PATH]
        [--keep DB] [--compare-to DB]

Prints the messages, the wall time and the process's CPU time, and messages per CPU-second,
which a loaded machine changes far less than messages per wall second.

``--keep`` leaves the imported SQLite database at ``DB``; ``--compare-to`` then checks it
against one an earlier version kept: the same notes, lines, windows and facts, and every
note and window vector within :data:`COSINE_NOISE` of its earlier self (a change of the
embedding's arithmetic must not change what is stored beyond float rounding). A difference
is printed and the exit status is 1.
"""

from __future__ import annotations

import argparse
import json
import resource
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from vivy.config import Settings
from vivy.importer.replay import import_exports
from vivy.llm.offline import OfflineLLM
from vivy_lab.eval.longconv_dev import DEFAULT_DEV_PATH, load_dev, write_exports

#: The largest ``1 - cosine`` between a stored vector and its earlier self that is rounding.
COSINE_NOISE = 1e-5

#: The stored rows that must be equal, as queries ordered the same way on both databases.
_SAME_ROWS = {
    "notes": "SELECT guild_id, channel_id, note_type, participants, title, summary, topics,"
    " decisions, open_questions, entities, first_message_id, last_message_id, message_count,"
    " note_date FROM interaction_notes ORDER BY guild_id, first_message_id, note_type, title",
    "lines": "SELECT message_id, author_id, author_name, text FROM note_lines ORDER BY message_id",
    "windows": "SELECT guild_id, first_message_id, last_message_id, text FROM evidence_windows"
    " ORDER BY guild_id, first_message_id, last_message_id",
    "facts": "SELECT guild_id, user_id, section, text, source_kind, source_label,"
    " invalidated_at IS NULL FROM profile_facts ORDER BY guild_id, user_id, section, text",
}
#: Each stored vector with a key that names it on both databases.
_VECTORS = {
    "note vectors": "SELECT n.guild_id, n.first_message_id, n.note_type, n.title, v.embedding"
    " FROM vec_notes v JOIN interaction_notes n ON n.id = v.note_id",
    "window vectors": "SELECT guild_id, first_message_id, last_message_id, embedding"
    " FROM evidence_windows WHERE embedding IS NOT NULL",
}


def cpu_seconds() -> float:
    """User and system CPU time of this process so far, its threads included."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def differences(new: Path, old: Path) -> list[str]:
    """What the database ``new`` stores differently from ``old``, one line each (none when
    they agree up to float rounding)."""
    found: list[str] = []
    with sqlite3.connect(new) as a, sqlite3.connect(old) as b:
        for name, query in _SAME_ROWS.items():
            mine, theirs = a.execute(query).fetchall(), b.execute(query).fetchall()
            if mine != theirs:
                changed = sum(x != y for x, y in zip(mine, theirs, strict=False))
                found.append(
                    f"{name}: {len(mine)} rows against {len(theirs)}, {changed} of them differ"
                )
        for name, query in _VECTORS.items():
            mine_by_key = {row[:-1]: row[-1] for row in a.execute(query)}
            theirs_by_key = {row[:-1]: row[-1] for row in b.execute(query)}
            if mine_by_key.keys() != theirs_by_key.keys():
                found.append(f"{name}: stored for other rows")
                continue
            keys = sorted(mine_by_key, key=repr)
            if not keys:
                continue
            x = np.array([np.frombuffer(mine_by_key[k], dtype=np.float32) for k in keys])
            y = np.array([np.frombuffer(theirs_by_key[k], dtype=np.float32) for k in keys])
            cosine = np.einsum("rd,rd->r", x, y) / (
                np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1)
            )
            worst = float(1.0 - cosine.min())
            print(f"{name}: {len(keys)}, largest 1 - cosine {worst:.2e}")
            if worst > COSINE_NOISE:
                found.append(f"{name}: 1 - cosine up to {worst:.2e}")
    return found


def main(path: Path, conversations: int, keep: Path | None, compare_to: Path | None) -> int:
    """Import the first ``conversations`` of the dev set into a new database; print figures."""
    dev = load_dev(path)
    llm = OfflineLLM()
    with tempfile.TemporaryDirectory(prefix="vivy-import-real-") as folder:
        exports = write_exports(dev, Path(folder) / "exports")[:conversations]
        messages = sum(len(json.loads(p.read_text())["messages"]) for p in exports)
        database = keep if keep is not None else Path(folder) / "import.db"
        if database.exists():
            database.unlink()
        wall, cpu = time.perf_counter(), cpu_seconds()
        import_exports(exports, Settings(), llm=llm, database=database)
        wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
        print(
            f"{messages} messages: wall {wall:.1f} s ({messages / wall:.1f} messages/s),"
            f" CPU {cpu:.1f} s ({messages / cpu:.1f} messages per CPU-second)"
        )
        if compare_to is None:
            return 0
        found = differences(database, compare_to)
    for line in found:
        print(f"differs from {compare_to}: {line}")
    if not found:
        print(f"stores what {compare_to} stores, vectors within {COSINE_NOISE} cosine")
    return 1 if found else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dev-data", type=Path, default=DEFAULT_DEV_PATH)
    parser.add_argument("--conversations", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="leave the imported database here")
    parser.add_argument("--compare-to", type=Path, help="a database an earlier run kept")
    args = parser.parse_args()
    sys.exit(main(args.dev_data, args.conversations, args.keep, args.compare_to))
