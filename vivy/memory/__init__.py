"""The domain records at the bottom of Vivy: notes, evidence, buffers, facts and their
operations, members and the database's own state.

They are frozen records (and a few pure helpers over them) that the state machines, storage,
retrieval, the bot and the LLM layer all use and pass across their ports as plain values.
This package imports nothing else of Vivy, so any layer may import it.
"""

from __future__ import annotations

__all__: list[str] = []
