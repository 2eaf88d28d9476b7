"""Shared pieces of the reliability tests: a fake Gemini that answers by request kind, and a
way to run the real SDK against it on virtual time without flaking.

Under trio's ``MockClock`` with an autojump threshold, virtual time may jump while a real
socket round trip is in flight, and a jump can fire the client's read time-out. Instead,
:func:`run_driven` runs a test with a mock clock that never jumps by itself and a driver task
that jumps to the next deadline only when every task is blocked *and* no HTTP answer is due.
:class:`CountingTransport`, under the SDK's httpx2 client, counts the requests in flight; a
request the fake server was told to leave unanswered (a time-out) does not count, so its
time-out passes purely in virtual time. How each request is answered is decided by the test
and carried to the server in the :data:`PLAN_HEADER` request header, never by real time.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
import trio
import trio.testing

from vivy.llm.prompts import CLUSTER_SYSTEM, CONSOLIDATION_SYSTEM, NOTE_SYSTEM
from vivy.llm.prompts import PROFILE_UPDATE_SYSTEM as PROFILE_SYSTEM
from vivy.state.gate import IncomingMessage
from vivy_lab.fakes.gemini import FakeGemini, RecordedRequest, Reply, answer, error, slow

#: The request header through which a test tells the fake server how to answer one request.
PLAN_HEADER = "x-fake-reply"

#: Real seconds after which an answered round trip that has not finished is taken to hang (a
#: guard against a stuck test, far above any machine's load, not a measure of speed).
ROUND_TRIP_LIMIT_S = 300.0

#: A valid note, the healthy answer to every note request.
VALID_NOTE: dict[str, Any] = {
    "title": "Weekend plans",
    "summary": "The members talked about their weekend and where they live.",
    "topics": ["weekend"],
    "decisions": [],
    "open_questions": [],
    "entities": [],
}


def member_message(
    guild: int, channel: int, channel_name: str, message_id: int, author: int, text: str, at: float
) -> IncomingMessage:
    """A human message from ``member<author>``."""
    return IncomingMessage(
        guild_id=guild,
        channel_id=channel,
        message_id=message_id,
        author_id=author,
        author_name=f"member{author}",
        text=text,
        created_at=at,
        channel_name=channel_name,
    )


def request_kind(recorded: RecordedRequest) -> str:
    """``note``, ``profile``, ``consolidation``, ``cluster`` or ``embed``, from the system text."""
    if recorded.method == "batchEmbedContents":
        return "embed"
    raw = json.dumps(recorded.body)
    for kind, system in (
        ("note", NOTE_SYSTEM),
        ("profile", PROFILE_SYSTEM),
        ("consolidation", CONSOLIDATION_SYSTEM),
        ("cluster", CLUSTER_SYSTEM),
    ):
        if json.dumps(system[:40])[1:-1] in raw:
            return kind
    return "unknown"


def healthy_reply(recorded: RecordedRequest) -> Reply | None:
    """A valid answer for the request's kind (None: let the server's default answer)."""
    kind = request_kind(recorded)
    if kind == "note":
        return answer(VALID_NOTE)
    if kind in ("profile", "consolidation"):
        return answer({"operations": []})
    if kind == "cluster":
        return answer({"clusters": []})
    return None


def planned_reply(recorded: RecordedRequest) -> Reply | None:
    """The reply the request's :data:`PLAN_HEADER` asks for (``429``, ``500``, ``timeout``)."""
    plan = recorded.headers.get(PLAN_HEADER, "ok")
    if plan == "timeout":
        return slow(answer(VALID_NOTE), 120.0)  # released when the server stops
    if plan.isdigit():
        return error(int(plan), f"scripted outage ({plan})")
    return healthy_reply(recorded)


class RoutingGemini(FakeGemini):
    """The fake Gemini server, answering each request through ``route`` (by default
    :func:`planned_reply`) instead of a script."""

    def __init__(self) -> None:
        super().__init__(route=planned_reply)


@dataclass(frozen=True, slots=True)
class Sent:
    """One HTTP request as the client sent it, at a virtual time."""

    at: float
    path: str
    plan: str
    body: str


class CountingTransport(httpx2.AsyncBaseTransport):
    """Sends through a real transport, stamps each request's plan and counts those in flight.

    ``plan`` names how the fake server is to answer the next request: ``ok``, an HTTP status
    such as ``429``, or ``timeout`` (no answer; the client's time-out decides).
    """

    def __init__(self, plan: Callable[[], str] = lambda: "ok") -> None:
        self._inner = httpx2.AsyncHTTPTransport(trust_env=False)
        self._plan = plan
        self.awaiting = 0
        self.sent: list[Sent] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Forward ``request``; until its body is read an answer is due, unless it stalls."""
        plan = self._plan()
        request.headers[PLAN_HEADER] = plan
        self.sent.append(
            Sent(trio.current_time(), request.url.path, plan, request.content.decode())
        )
        due = plan != "timeout"
        self.awaiting += due
        try:
            response = await self._inner.handle_async_request(request)
            try:
                body = await response.aread()
            finally:
                await response.aclose()
            return httpx2.Response(
                response.status_code,
                headers=response.headers,
                content=body,
                extensions=response.extensions,
            )
        finally:
            self.awaiting -= due

    async def aclose(self) -> None:
        """Close the real transport."""
        await self._inner.aclose()


async def drive(clock: trio.testing.MockClock, transport: CountingTransport) -> None:
    """Jump to the next deadline whenever all tasks wait and no HTTP answer is due."""
    busy_since: float | None = None
    while True:
        await trio.testing.wait_all_tasks_blocked(cushion=0.001)
        if transport.awaiting:
            busy_since = busy_since or time.monotonic()
            if time.monotonic() - busy_since > ROUND_TRIP_LIMIT_S:
                raise AssertionError("an answered round trip to the fake server never finished")
            continue
        busy_since = None
        jump = trio.lowlevel.current_statistics().seconds_to_next_deadline
        if 0 < jump < math.inf:
            clock.jump(jump)


def run_driven(main: Callable[[], Awaitable[None]], transport: CountingTransport) -> None:
    """Run ``main`` on trio, virtual time moved by :func:`drive`."""
    clock = trio.testing.MockClock()

    async def top() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(drive, clock, transport)
            await main()
            nursery.cancel_scope.cancel()

    trio.run(top, clock=clock)


@pytest.fixture
def routing_gemini() -> Iterator[RoutingGemini]:
    """A started :class:`RoutingGemini` on 127.0.0.1, stopped after the test."""
    server = RoutingGemini().start()
    try:
        yield server
    finally:
        server.stop()
