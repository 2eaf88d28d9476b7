"""An hour-long Gemini outage (429s, 500s, time-outs) through the real pipeline and SDK.

The fake Gemini server stands in for the service and google-genai talks to it over httpx2 on
127.0.0.1. Virtual time moves only when no answer is due (see ``conftest.run_driven``), so a
time-out is a virtual read deadline passing and a healthy round trip never sees time move,
however loaded the machine. Which requests fail, and how, follows a phase flag the test flips
at a virtual time and a request counter, never real time.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
import trio
import trio.testing
from prometheus_client import CollectorRegistry

from vivy.actors.note_writer import OUTBOX_BACKOFF
from vivy.app import App, running_app
from vivy.clock import Clock
from vivy.config import BufferSettings, Settings
from vivy.llm.gemini import GeminiConfig, GeminiLLM
from vivy.llm.retry import Backoff
from vivy.state.gate import IncomingMessage, IngestOutcome
from vivy.storage.sqlite.db import Connection

from .conftest import CountingTransport, RoutingGemini, member_message, run_driven

#: 2026-03-02T08:00:00Z at virtual time zero.
WALL0 = 1772438400.0
GUILD = 300
#: The outage lasts one virtual hour.
OUTAGE_S = 3600.0
#: In-call retries: two attempts per call, a jittered wait of at most 4 s in between.
CALL_BACKOFF = Backoff(base_s=2.0, cap_s=4.0, max_attempts=2)
#: Each HTTP attempt gives up after 20 virtual seconds without an answer.
TIMEOUT_S = 20.0


@dataclass
class OutagePlan:
    """Decides each request's fate: during the outage, 429, 500 and a time-out in turn."""

    outage: bool = True
    failures: itertools.cycle[str] = field(
        default_factory=lambda: itertools.cycle(["429", "500", "timeout"])
    )

    def __call__(self) -> str:
        """The plan of the next request."""
        return next(self.failures) if self.outage else "ok"


def message(message_id: int, channel: int, author: int, text: str, at: float) -> IncomingMessage:
    """A human message in channel ``outage-<channel>`` of the test guild."""
    return member_message(GUILD, channel, f"outage-{channel}", message_id, author, text, at)


def scalar(conn: Connection, sql: str) -> int:
    """One integer from a query."""
    return int(conn.execute(sql).fetchone()[0])


def attempts_by_channel(conn: Connection) -> dict[int, int]:
    """Failed note attempts of each closed buffer, by channel."""
    rows = conn.execute("SELECT channel_id, attempts FROM channel_buffers WHERE status = 'closed'")
    return {int(channel): int(attempts) for channel, attempts in rows}


def attempt_starts(times: list[float], gap_s: float) -> list[float]:
    """The first request time of each note attempt: a new attempt starts after ``gap_s``."""
    starts: list[float] = []
    previous = -math.inf
    for at in sorted(times):
        if at - previous >= gap_s:
            starts.append(at)
        previous = at
    return starts


def test_hour_long_outage_backs_off_then_every_buffer_becomes_a_note(tmp_path: Path) -> None:
    """Ingestion goes on, the outbox grows and backs off with jitter, and recovery drains it."""
    plan = OutagePlan()
    transport = CountingTransport(plan)
    registry = CollectorRegistry()
    settings = Settings(
        database=tmp_path / "vivy.db",
        buffers=BufferSettings(inactivity_min_s=600.0, inactivity_max_s=600.0),
        profile_delay_s=0.0,
    )
    server = RoutingGemini().start()
    checks: dict[str, object] = {}

    async def ingest(app: App, message_: IncomingMessage) -> None:
        await trio.sleep_until(app.clock.to_monotonic(message_.created_at))
        assert await app.router.ingest(message_) is IngestOutcome.STORED

    async def main() -> None:
        http = httpx2.AsyncClient(transport=transport, trust_env=False)
        llm = GeminiLLM(
            GeminiConfig(
                api_key="k", base_url=server.base_url, backoff=CALL_BACKOFF, timeout_s=TIMEOUT_S
            ),
            http_client=http,
            rng=random.Random(7),
        )
        clock = Clock.starting_at(WALL0)
        async with running_app(
            settings, clock=clock, inline=True, llm=llm, registry=registry, scheduler=False
        ) as app:
            pending = registry.get_sample_value
            # Six conversations during the outage, each closing by inactivity within it.
            message_id = 1000
            for channel in range(1, 7):
                for k, (author, text) in enumerate(
                    [
                        (11, f"I live in Austin and channel {channel} is my favourite"),
                        (12, "I work at Dell as a QA engineer"),
                        (11, "nice, see you on the weekend"),
                    ]
                ):
                    message_id += 1
                    at = WALL0 + 120.0 * channel + 30.0 * k
                    await ingest(app, message(message_id, channel, author, text, at))
            # A seventh channel keeps talking through the second half of the outage.
            for k in range(7):
                message_id += 1
                at = WALL0 + 1500.0 + 300.0 * k
                await ingest(app, message(message_id, 7, 13, f"still chatting, take {k}", at))
            await trio.sleep_until(OUTAGE_S - 5.0)
            checks["closed"] = await app.db.read(attempts_by_channel)
            checks["gauge"] = pending("vivy_outbox_buffers_pending")
            checks["notes_in_outage"] = await app.db.read(
                scalar, "SELECT COUNT(*) FROM interaction_notes"
            )
            checks["open_in_outage"] = await app.db.read(
                scalar, "SELECT COUNT(*) FROM channel_buffers WHERE status = 'open'"
            )
            checks["sent_in_outage"] = list(transport.sent)
            plan.outage = False
            # The longest wait a buffer can have been given is 30 s + the 1 h cap.
            await trio.sleep_until(OUTAGE_S + OUTBOX_BACKOFF.base_s + OUTBOX_BACKOFF.cap_s + 60)
            checks["notes"] = await app.db.read(
                scalar, "SELECT COUNT(*) FROM interaction_notes WHERE note_type = 'conversation'"
            )
            checks["left"] = await app.db.read(scalar, "SELECT COUNT(*) FROM channel_buffers")
            checks["updates_pending"] = await app.db.read(
                scalar, "SELECT COUNT(*) FROM profile_updates WHERE status = 'pending'"
            )
            checks["gauge_after"] = pending("vivy_outbox_buffers_pending")
        await http.aclose()

    try:
        run_driven(main, transport)
    finally:
        server.stop()

    # During the outage: every conversation stored and closed, none noted, the gauge agrees.
    closed = checks["closed"]
    assert isinstance(closed, dict)
    assert sorted(closed) == [1, 2, 3, 4, 5, 6]
    assert checks["gauge"] == 6.0
    assert checks["notes_in_outage"] == 0
    assert checks["open_in_outage"] == 1  # channel 7, still talking

    # Backoff: per buffer, few attempts, at least 30 s apart, at most 30 s + the cap.
    sent = checks["sent_in_outage"]
    assert isinstance(sent, list)
    assert {s.plan for s in sent} == {"429", "500", "timeout"}
    times: defaultdict[int, list[float]] = defaultdict(list)
    for s in sent:
        if s.path.endswith(":generateContent"):
            found = re.search(r"#outage-(\d+)", s.body)
            assert found is not None
            times[int(found[1])].append(s.at)
    first_gaps = []
    # Within one call the attempts are at most 4 s + one 20 s time-out apart, and one call
    # lasts at most two time-outs and the wait between them.
    attempt_gap = CALL_BACKOFF.cap_s + TIMEOUT_S + 1.0
    call_s = 2 * TIMEOUT_S + CALL_BACKOFF.cap_s
    for channel, attempts in closed.items():
        starts = attempt_starts(times[channel], attempt_gap)
        # A call may still be under way at the snapshot, its failure not yet recorded.
        assert attempts <= len(starts) <= attempts + 1, (channel, starts)
        assert 3 <= attempts <= 12, f"channel {channel}: {attempts} note attempts in an hour"
        assert len(times[channel]) <= CALL_BACKOFF.max_attempts * attempts
        gaps = [b - a for a, b in itertools.pairwise(starts)]
        assert all(
            OUTBOX_BACKOFF.base_s <= g <= OUTBOX_BACKOFF.base_s + OUTBOX_BACKOFF.cap_s + call_s
            for g in gaps
        ), gaps
        first_gaps.append(round(gaps[0], 3))
    assert len(set(first_gaps)) > 1, "retries of different buffers are not jittered"
    assert len(sent) < 25 * len(closed), "more than 25 requests per pending buffer per hour"

    # After recovery: every buffer became exactly one note and every update was applied.
    assert checks["notes"] == 7
    assert checks["left"] == 0
    assert checks["updates_pending"] == 0
    assert checks["gauge_after"] == 0.0
