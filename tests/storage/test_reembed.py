"""``vivy reembed`` storage through the port: vectors staged per model, resumed, and swapped
in all at once, at a new dimension too."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.storage import Probe
from tests.storage.test_profiles import closed_buffer, new_note
from vivy.memory.notes import Participant
from vivy.storage.port import Store

pytestmark = pytest.mark.anyio


async def two_notes(store: Store) -> list[int]:
    """A conversation note with two participants, then a topic cluster; their ids."""
    people = (Participant(8, "Maya", 1), Participant(7, "Sam", 3))
    first = await store.notes.commit_conversation_note(
        await closed_buffer(store), replace(new_note(), participants=people, topics=("pets",))
    )
    cluster = replace(new_note(7), note_type="topic_cluster")
    (second,) = await store.notes.commit_cluster_notes(5, "2026-03-02", [cluster], 400.0)
    assert first is not None
    return [first, second]


async def test_staging_resumes_and_swaps_only_when_every_note_has_a_vector(
    store: Store, probe: Probe
) -> None:
    """Notes to embed carry their header fields; the swap waits for the last vector, then
    writes them all (recreating the index at the new dimension) and records the model."""
    first, second = await two_notes(store)
    assert await store.reembed.begin_staging("new-model:256") == 0
    waiting = await store.reembed.notes_to_embed(10)
    assert [n.id for n in waiting] == [first, second]
    assert waiting[0].participants == ("Maya", "Sam") and waiting[0].topics == ("pets",)
    assert (waiting[1].note_type, waiting[0].channel_name) == ("topic_cluster", "general")
    await store.reembed.stage_vectors([(first, [1.0] + [0.0] * 255)])
    assert await store.reembed.swap_note_vectors("new-model", 256) is None
    assert await store.reembed.begin_staging("new-model:256") == 1  # resumed
    assert [n.id for n in await store.reembed.notes_to_embed(10)] == [second]
    await store.reembed.stage_vectors([(second, [0.0, 1.0] + [0.0] * 254)])
    assert await store.reembed.swap_note_vectors("new-model", 256) == 2
    assert await store.meta.get_meta("embedding_model") == "new-model"
    assert await store.meta.get_meta("embedding_dimension") == "256"
    assert await probe.count("SELECT COUNT(*) FROM vec_notes") == 2
    kinds = await probe.rows("SELECT note_id, note_kind FROM vec_notes ORDER BY note_id")
    assert kinds == [(first, "conv"), (second, "cluster")]


async def test_another_model_throws_the_staged_vectors_away(store: Store) -> None:
    """Staging for a different model starts over."""
    first, _ = await two_notes(store)
    await store.reembed.begin_staging("a:768")
    await store.reembed.stage_vectors([(first, [1.0] + [0.0] * 767)])
    assert await store.reembed.begin_staging("a:768") == 1
    assert await store.reembed.begin_staging("b:768") == 0
    assert len(await store.reembed.notes_to_embed(10)) == 2
