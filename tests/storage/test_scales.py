"""Each guild's similarity scale through the port: the sample the nightly job measures it on,
and the measured scale among the database's facts, on both engines."""

from __future__ import annotations

import pytest

from tests.storage import Probe
from vivy.memory.buffers import BufferedMessage, CloseReason
from vivy.memory.evidence import windows_of
from vivy.memory.notes import NewNote, Participant
from vivy.memory.scales import SimilarityScale, scale_key
from vivy.storage.port import Store

pytestmark = pytest.mark.anyio

WALL0 = 1772409600.0
GUILD = 100
OTHER_GUILD = 200
DIM = 768


def marked(note: int, window: int = 0) -> list[float]:
    """A vector that names its note and window in its first two values."""
    return [float(note), float(window), *([0.5] * (DIM - 2))]


async def store_note(store: Store, guild_id: int, number: int, lines: int) -> int:
    """Commit a conversation of ``lines`` messages (windows: every two lines from the first)
    whose vectors are :func:`marked` with ``number``."""
    base = number * 1000
    rows = [
        (base + i, 7 if i % 2 else 8, "Sam" if i % 2 else "Maya", f"line {i}") for i in range(lines)
    ]
    buffer_id = await store.buffers.open_buffer(guild_id, number, "chat", WALL0, 1500.0)
    await store.buffers.append_messages(
        buffer_id,
        [BufferedMessage(m, a, n, t, WALL0 + m) for m, a, n, t in rows],
        WALL0 + base + lines,
    )
    await store.buffers.close_buffer(buffer_id, WALL0 + base + 3600, CloseReason.INACTIVITY)
    windows = windows_of([(m, n, t) for m, _, n, t in rows])
    note = NewNote(
        guild_id=guild_id,
        channel_id=number,
        channel_name="chat",
        note_type="conversation",
        title=f"conversation {number}",
        summary="They talked.",
        topics=(),
        decisions=(),
        open_questions=(),
        entities=(),
        participants=(Participant(7, "Sam", 1), Participant(8, "Maya", 1)),
        note_date="2026-03-02",
        quality="ok",
        model="test",
        embedding=marked(number),
        created_at=WALL0 + base + 3600,
        started_at=WALL0 + base,
        ended_at=WALL0 + base + lines,
        windows=tuple(windows),
        window_embeddings=tuple(marked(number, w) for w in range(len(windows))),
    )
    found = await store.notes.commit_conversation_note(buffer_id, note)
    assert found is not None
    return found


def shown(vector: tuple[float, ...]) -> tuple[int, int]:
    """The note and window a :func:`marked` vector names."""
    return int(vector[0]), int(vector[1])


async def test_sample_takes_the_newest_notes_with_evidence_and_spreads_their_windows(
    store: Store,
) -> None:
    """The newest notes come first, each with its windows spread over the conversation;
    a note without evidence and notes beyond the limit are left out."""
    await store_note(store, GUILD, 1, lines=20)
    second = await store_note(store, GUILD, 2, lines=20)
    await store_note(store, GUILD, 3, lines=0)
    fourth = await store_note(store, GUILD, 4, lines=8)
    sample = await store.jobs.scale_sample(GUILD, DIM, notes=3, windows=4)
    assert sample.guild_id == GUILD
    assert [n.note_id for n in sample.notes] == [fourth, second]
    assert shown(sample.notes[0].vector) == (4, 0)
    # Eight lines make three windows, all taken; twenty make nine, and four spread over them.
    assert [shown(w) for w in sample.notes[0].windows] == [(4, 0), (4, 1), (4, 2)]
    assert [shown(w) for w in sample.notes[1].windows] == [(2, 0), (2, 3), (2, 5), (2, 7)]
    assert all(len(w) == DIM for n in sample.notes for w in n.windows)


async def test_sample_keeps_to_the_guild_and_the_dimension(store: Store, probe: Probe) -> None:
    """Another guild's notes, and windows embedded at another dimension, are not sampled."""
    ours = await store_note(store, GUILD, 1, lines=6)
    other_dim = await store_note(store, GUILD, 2, lines=6)
    await store_note(store, OTHER_GUILD, 3, lines=6)
    rows = await probe.rows(
        "SELECT id FROM evidence_windows WHERE note_id = ? ORDER BY id", other_dim
    )
    await store.evidence.set_window_embeddings([(int(str(r[0])), [1.0, 0.0]) for r in rows])
    sample = await store.jobs.scale_sample(GUILD, DIM, notes=10, windows=4)
    assert [n.note_id for n in sample.notes] == [ours]
    assert (await store.jobs.scale_sample(GUILD, 256, notes=10, windows=4)).notes == ()


async def test_scale_is_stored_per_guild_model_and_dimension(store: Store) -> None:
    """A recorded scale reads back for its guild, model and dimension only, and a newer
    measurement replaces it."""
    first = SimilarityScale(0.12, 0.48, notes=40, pairs=320, measured_at=WALL0)
    await store.meta.set_meta(scale_key(GUILD, "model-a", 256), first.encode())

    async def read(guild_id: int, model: str, dimension: int) -> SimilarityScale | None:
        stored = await store.search.get_meta(scale_key(guild_id, model, dimension))
        return None if stored is None else SimilarityScale.decode(stored)

    assert await read(GUILD, "model-a", 256) == first
    assert await read(GUILD, "model-a", 768) is None
    assert await read(GUILD, "model-b", 256) is None
    assert await read(OTHER_GUILD, "model-a", 256) is None
    again = SimilarityScale(0.2, 0.55, notes=60, pairs=480, measured_at=WALL0 + 86400)
    await store.meta.set_meta(scale_key(GUILD, "model-a", 256), again.encode())
    assert await read(GUILD, "model-a", 256) == again
