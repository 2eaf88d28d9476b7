"""Garbage-collector settings for a long-running Vivy process.

Every ingested message makes a handful of short-lived container objects (its inbox item,
ack, state-machine event and effects). With CPython's default young-generation threshold
(700 allocations) the collector would run every few hundred messages and walk the messages
still in flight each time, and a full collection walks every module and cached object: a
large share of ingest time (``vivy bench ingest`` shows it).
"""

from __future__ import annotations

import gc

__all__ = ["YOUNG_THRESHOLD", "settle_heap"]

#: Container objects made and still alive (or in cycles) between two collections of the young
#: generation: above the ~4 per message that a burst of a few thousand messages keeps alive
#: while in flight (inbox item, ack, buffered copy), so a burst is not walked again and again.
YOUNG_THRESHOLD = 50_000


def settle_heap() -> None:
    """Freeze what start-up made and collect the young generation less often.

    Call once, when start-up is over: frozen objects (modules, configuration, restored state)
    are never walked by later collections, and a higher threshold lets short-lived objects die
    before the collector sees them. Cyclic garbage is still collected, just in larger steps.
    """
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
