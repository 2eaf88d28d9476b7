"""Facts about the database itself, through the port: the embedding model of its vectors."""

from __future__ import annotations

import pytest

from tests.storage import Probe
from tests.storage.test_profiles import closed_buffer, new_note
from vivy.storage.port import Store

pytestmark = pytest.mark.anyio


async def test_the_embedding_model_is_adopted_until_notes_use_it(store: Store) -> None:
    """The first model is recorded; another one is refused once notes exist, not before; and
    a note of the model adopted last is stored at its dimension (768 here), whatever the
    dimension adopted before it."""
    assert await store.meta.adopt_embedding_model("a", 256) is None
    assert await store.meta.adopt_embedding_model("b", 768) is None  # no notes yet
    assert await store.meta.get_meta("embedding_model") == "b"
    await store.notes.commit_conversation_note(await closed_buffer(store), new_note(7))
    stale = await store.meta.adopt_embedding_model("a", 256)
    assert stale is not None and (stale.model, stale.dimension) == ("b", "768")
    assert await store.meta.adopt_embedding_model("b", 768) is None


async def test_another_model_is_found_without_changing_anything(store: Store, probe: Probe) -> None:
    """The read-only check names the recorded model when notes of it exist and it is not the
    one asked about; notes whose model was never recorded are judged by their vectors'
    length; nothing is recorded by it."""
    assert await store.meta.other_embedding_model("a", 256) is None  # no notes, no record
    assert await store.meta.adopt_embedding_model("b", 768) is None
    await store.notes.commit_conversation_note(await closed_buffer(store), new_note(7))
    assert await store.meta.other_embedding_model("b", 768) is None
    other = await store.meta.other_embedding_model("b", 256)
    assert other is not None and (other.model, other.dimension) == ("b", "768")
    await probe.execute("DELETE FROM meta WHERE key IN ('embedding_model', 'embedding_dimension')")
    unrecorded = await store.meta.other_embedding_model("a", 256)
    assert unrecorded is not None and unrecorded.dimension == "768"
    assert await store.meta.other_embedding_model("a", 768) is None
    assert await store.meta.get_meta("embedding_model") is None
    refused = await store.meta.adopt_embedding_model("a", 256)
    assert refused == unrecorded
    assert await store.meta.adopt_embedding_model("a", 768) is None
    assert await store.meta.get_meta("embedding_model") == "a"
