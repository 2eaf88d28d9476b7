"""Facts about the database itself, through the port: the embedding model of its vectors."""

from __future__ import annotations

import pytest

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
