"""Crash test: kill the pipeline with SIGKILL at seeded random points, then check invariants.

    python benchmarks/crash.py --kills 50 --messages 12000

A child process replays a long, deterministic conversation through the real pipeline (router,
channel actors, NoteWriter, ProfileUpdaters; SQLite; offline LLM) on virtual time, appending
each message id to an "acked" log as soon as ``Router.ingest`` returns. The parent kills it
with SIGKILL after a random (seeded) delay, restarts it (it resumes after the last acked
message, redelivering the one in flight, as a gateway would), and repeats. A last run finishes
the replay and drains every buffer and outbox. Then the invariants are checked:

* every acknowledged message is in an open buffer or in exactly one note of its channel;
* no buffer has two notes, and the message ranges of a channel's notes do not overlap;
* every profile update is applied, once: no member has the same active fact twice;
* ``PRAGMA integrity_check`` is ok.

It prints the figures and exits 1 if an invariant fails. ``--hashed-embeddings`` embeds with
the tests' deterministic hashing double instead of the local sentence model: the invariants
do not depend on what the vectors mean, and the test suite's short run need not pay for the
model in every child.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

CHANNELS = 12
AUTHORS = [(11, "alex"), (12, "sam"), (13, "maya"), (14, "jordan"), (15, "priya")]
PHRASES = [
    "I live in {city}",
    "I love {thing}",
    "I work at {company}",
    "anyone tried {thing} lately?",
    "let's meet on {day} at {hour}",
    "I prefer {thing} over {other}",
    "that {thing} patch notes thread was wild",
    "my cat is named {pet}",
]
WORDS = {
    "city": ["Austin", "Denver", "Chicago", "Toronto", "Phoenix"],
    "thing": ["JRPGs", "Rust", "Neovim", "bouldering", "Stardew Valley", "Postgres"],
    "other": ["Windows", "MySQL", "Emacs"],
    "company": ["Dell", "Ledgerly", "a warehouse", "St. David's"],
    "day": ["Friday", "Sunday", "Tuesday"],
    "hour": ["8", "2pm", "noon"],
    "pet": ["Miso", "Gerald", "Bento"],
}
START = 1772409600.0  # 2026-03-02T00:00:00Z
GUILD = 900


def replay(seed: int, count: int) -> list[tuple[int, int, int, str, str, float]]:
    """(message id, channel, author id, author name, text, time) in time order."""
    rng = random.Random(seed)
    at = START
    rows = []
    for index in range(count):
        # Mostly chatty bursts, sometimes a long quiet gap that closes buffers.
        at += rng.choice([20, 45, 90, 240]) if rng.random() > 0.04 else rng.uniform(1800, 5400)
        author, name = rng.choice(AUTHORS)
        phrase = rng.choice(PHRASES)
        text = phrase.format(**{k: rng.choice(v) for k, v in WORDS.items()})
        rows.append((10_000 + index, 1 + rng.randrange(CHANNELS), author, name, text, at))
    return rows


def child(db: Path, log: Path, seed: int, count: int, hashed: bool) -> int:
    """Replay from after the last acked message; drain when the replay is complete."""
    import anyio
    import trio
    from trio.testing import MockClock

    from vivy.app import running_app
    from vivy.clock import Clock
    from vivy.config import BufferSettings, Settings
    from vivy.llm.offline import OfflineLLM
    from vivy.logs import configure_logging
    from vivy.state.gate import IncomingMessage

    configure_logging("warning")
    if hashed:
        _embed_hashed()

    messages = replay(seed, count)
    acked = [int(x) for x in log.read_text().split()] if log.exists() else []
    start = max((i for i, m in enumerate(messages) if m[0] in set(acked[-1:])), default=-1)
    # Redeliver the message in flight at the kill (the one after the last acked).
    start = max(start, 0)
    settings = Settings(
        database=db,
        buffers=BufferSettings(inactivity_min_s=1200.0, inactivity_max_s=1800.0, cap=40),
        min_note_messages=1,
        catchup_time_limit_s=0.0,
    )

    async def main() -> None:
        clock = Clock.starting_at(messages[start][5] if start < len(messages) else messages[-1][5])
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        async with running_app(
            settings, clock=clock, inline=True, llm=OfflineLLM(), scheduler=False
        ) as app:
            print("ready", flush=True)
            for message_id, channel, author, name, text, at in messages[start:]:
                await anyio.sleep_until(clock.to_monotonic(max(at, clock.now())))
                await app.router.ingest(
                    IncomingMessage(GUILD, channel, message_id, author, name, text, at)
                )
                os.write(fd, f"{message_id}\n".encode())
            await anyio.sleep(4 * 3600)  # every buffer closes; notes and updates drain
            while app.notes.backlog or app.profiles.active:  # noqa: ASYNC110 - virtual time
                await anyio.sleep(60)
            print("drained", flush=True)
        os.close(fd)

    trio.run(main, clock=MockClock(autojump_threshold=0))
    return 0


def _embed_hashed() -> None:
    """Embed with the tests' hashing double (``tests/hashing.py`` of this repository)."""
    import pytest

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.hashing import install_hashed_sentences

    install_hashed_sentences(pytest.MonkeyPatch())


def check(db: Path, log: Path) -> list[str]:
    """The invariants that fail (empty when all hold)."""
    from vivy.storage.sqlite.db import connect

    conn = connect(db)
    problems: list[str] = []
    acked = {int(x) for x in log.read_text().split()}
    buffered = {int(r[0]) for r in conn.execute("SELECT message_id FROM buffer_messages")}
    notes = conn.execute(
        "SELECT id, channel_id, first_message_id, last_message_id, buffer_id FROM interaction_notes"
        " WHERE note_type = 'conversation' ORDER BY channel_id, first_message_id"
    ).fetchall()
    channel_of = {m[0]: m[1] for m in replay(ARGS.seed, ARGS.messages)}
    for message_id in sorted(acked):
        covering = [
            n for n in notes if n[1] == channel_of[message_id] and n[2] <= message_id <= n[3]
        ]
        if message_id not in buffered and len(covering) != 1:
            problems.append(f"message {message_id} is in {len(covering)} notes and no buffer")
    buffer_ids = [n[4] for n in notes]
    if len(buffer_ids) != len(set(buffer_ids)):
        problems.append("a buffer has two notes")
    for a, b in itertools.pairwise(notes):
        if a[1] == b[1] and b[2] <= a[3]:
            problems.append(f"notes {a[0]} and {b[0]} overlap")
    pending = conn.execute("SELECT COUNT(*) FROM profile_updates WHERE status = 'pending'")
    if (count := pending.fetchone()[0]) != 0:
        problems.append(f"{count} profile updates still pending")
    duplicates = conn.execute(
        "SELECT COUNT(*) FROM (SELECT 1 FROM profile_facts WHERE invalidated_at IS NULL"
        " GROUP BY guild_id, user_id, section, text HAVING COUNT(*) > 1)"
    ).fetchone()[0]
    if duplicates:
        problems.append(f"{duplicates} facts applied twice")
    integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
    if integrity != "ok":
        problems.append(f"integrity_check: {integrity}")
    conn.close()
    return problems


def run(args: argparse.Namespace) -> int:
    """Kill and restart the child ``--kills`` times, finish, and check the invariants."""
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        db, log = Path(tmp) / "crash.db", Path(tmp) / "acked.log"
        command = [
            sys.executable,
            __file__,
            "--child",
            "--db",
            str(db),
            "--log",
            str(log),
            "--seed",
            str(args.seed),
            "--messages",
            str(args.messages),
            *(["--hashed-embeddings"] if args.hashed_embeddings else []),
        ]
        kills = 0
        started = time.perf_counter()
        while kills < args.kills:
            proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                proc.wait()
                print(f"child failed to start (exit {proc.returncode})", file=sys.stderr)
                return 1
            time.sleep(rng.uniform(0.0, args.max_delay))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            proc.wait()
            if proc.returncode == 0:  # the replay finished before the kill: nothing left
                break
        final = subprocess.run(command, capture_output=True, text=True, check=False)
        if final.returncode != 0:
            print(final.stderr[-2000:], file=sys.stderr)
            return 1
        acked = len(log.read_text().split())
        problems = check(db, log)
        print(f"kills: {kills}")
        print(f"acked_messages: {acked}")
        print(f"seconds: {time.perf_counter() - started:.1f}")
        print(f"invariant_failures: {len(problems)}")
        for problem in problems[:20]:
            print(f"  {problem}")
        return 1 if problems else 0


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--messages", type=int, default=12000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--max-delay", type=float, default=0.5, help="seconds before a kill")
    parser.add_argument(
        "--hashed-embeddings",
        action="store_true",
        help="embed with the tests' hashing double instead of the local sentence model",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--log", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


ARGS = parse(sys.argv[1:] if __name__ == "__main__" else [])

if __name__ == "__main__":
    if ARGS.child:
        sys.exit(child(ARGS.db, ARGS.log, ARGS.seed, ARGS.messages, ARGS.hashed_embeddings))
    sys.exit(run(ARGS))
