"""The paths a reply's memory retrieval can take, its fallbacks included; the metrics label
retrieval latency with them (label ``path``)."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["RetrievalPath"]


class RetrievalPath(StrEnum):
    """Which retrieval path served a reply."""

    #: Vector search, keywords and profiles.
    FULL = "full"
    #: Keyword search only: the query could not be embedded.
    KEYWORD_ONLY = "keyword_only"
    #: Profiles, activity and lore only: notes could not be searched.
    PROFILES_ONLY = "profiles_only"
    #: Retrieval switched off in the settings.
    DISABLED = "disabled"
    #: Nothing to remember: nothing relevant was found, or nothing could be read at all.
    EMPTY = "empty"
