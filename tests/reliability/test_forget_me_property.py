"""Property: after forget-me, no table holds the member's id or any of their message text."""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trio.testing import MockClock

from vivy.app import running_app
from vivy.clock import Clock
from vivy.config import BufferSettings, Settings
from vivy.llm.offline import OfflineLLM
from vivy.state.gate import IncomingMessage
from vivy.storage.members import forget_member
from vivy.storage.sqlite.db import Connection

GUILD = 500
TARGET = 7001
OTHERS = (7002, 7003, 7004)
WALL0 = 1772409600.0
TEMPLATES = (
    "I live in {w}town",
    "I love {w} games",
    "my cat is named {w}",
    "I work at {w} Corp",
    "anyone seen the {w} trailer?",
    "lol {w}",
)

message = st.tuples(
    st.sampled_from((TARGET, *OTHERS)),
    st.integers(min_value=1, max_value=2),  # channel
    st.sampled_from(TEMPLATES),
    st.integers(min_value=1, max_value=90),  # minutes since the previous message
    st.booleans(),  # mentions the target
)


def every_value(conn: Connection) -> list[tuple[str, object]]:
    """(table.column, value) for every value of every table, shadow tables included."""
    found: list[tuple[str, object]] = []
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
        cursor = conn.execute(f'SELECT * FROM "{table}"')
        columns = [d[0] for d in cursor.description]
        for row in cursor.fetchall():
            found.extend((f"{table}.{c}", v) for c, v in zip(columns, row, strict=True))
    return found


def traces(values: list[tuple[str, object]], texts: list[str]) -> list[str]:
    """Places that still hold the target's id or one of their texts."""
    hits = []
    for where, value in values:
        if value == TARGET or (isinstance(value, str) and str(TARGET) in value):
            hits.append(f"{where}: id")
        elif isinstance(value, bytes) and str(TARGET).encode() in value:
            hits.append(f"{where}: id in a blob")
        elif isinstance(value, str):
            hits.extend(f"{where}: {text!r}" for text in texts if text in value)
    return hits


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(message, min_size=2, max_size=30))
def test_forget_me_leaves_no_trace(conversation: list[tuple[int, int, str, int, bool]]) -> None:
    """Whatever was said, by whom and when, forget-me erases every trace of the member."""
    target_texts: list[str] = []
    found: list[str] = []

    async def main(folder: Path) -> None:
        settings_ = Settings(
            database=folder / "vivy.db",
            buffers=BufferSettings(inactivity_min_s=1500.0, inactivity_max_s=1500.0),
            min_note_messages=1,
            profile_delay_s=0.0,
        )
        clock = Clock.starting_at(WALL0)
        async with running_app(
            settings_, clock=clock, inline=True, llm=OfflineLLM(), scheduler=False
        ) as app:
            for index, (author, channel, template, gap, mention) in enumerate(conversation):
                await anyio.sleep(gap * 60)
                text = template.format(w=f"Word{index}x")
                if mention and author != TARGET:
                    text = f"<@{TARGET}> {text}"
                if author == TARGET:
                    target_texts.append(text)
                await app.router.ingest(
                    IncomingMessage(
                        GUILD,
                        channel,
                        10_000 + index,
                        author,
                        f"member{author}",
                        text,
                        clock.now(),
                        mentions=(TARGET,) if mention and author != TARGET else (),
                    )
                )
            await anyio.sleep(1200)  # some buffers closed and noted, maybe some still open
            await app.db.write(forget_member, GUILD, TARGET)
            found.extend(traces(await app.db.read(every_value), target_texts))

    with tempfile.TemporaryDirectory() as folder:
        trio.run(main, Path(folder), clock=MockClock(autojump_threshold=0))
    assert found == []
