"""A note's evidence: the messages it was written from, and the overlapping windows of
consecutive lines they are searched by."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "WINDOW_SIZE",
    "WINDOW_STRIDE",
    "EvidenceLine",
    "EvidenceWindow",
    "PendingMessage",
    "WindowText",
    "window_text",
    "windows_of",
]


#: Lines per evidence window, and how far the next window starts: each line is in two
#: windows, so an answer split over a window's edge is still found whole.
WINDOW_SIZE = 4


WINDOW_STRIDE = 2


@dataclass(frozen=True, slots=True)
class PendingMessage:
    """A message still in an open or closing buffer, not yet part of a note."""

    message_id: int
    channel_id: int
    author_name: str
    text: str
    created_at: float


@dataclass(frozen=True, slots=True)
class EvidenceLine:
    """One kept message of a note."""

    message_id: int
    note_id: int
    author_id: int
    author_name: str
    text: str
    created_at: float


@dataclass(frozen=True, slots=True)
class EvidenceWindow:
    """A run of consecutive lines of one note, as indexed: ``Name: text`` per line."""

    first_message_id: int
    last_message_id: int
    text: str


def window_text(lines: Sequence[tuple[str, str]]) -> str:
    """The indexed text of a window: one ``Name: text`` line per (author, text)."""
    return "\n".join(f"{author}: {text}" for author, text in lines if text.strip())


def windows_of(
    lines: Sequence[tuple[int, str, str]],
    *,
    size: int = WINDOW_SIZE,
    stride: int = WINDOW_STRIDE,
) -> list[EvidenceWindow]:
    """Overlapping windows of ``(message id, author name, text)`` lines, in order.

    Windows start every ``stride`` lines; the last one ends at the last line, so every line
    is covered. Fewer lines than ``size`` make one window.
    """
    kept = [line for line in lines if line[2].strip()]
    if not kept:
        return []
    starts = list(range(0, max(1, len(kept) - size + stride), stride))
    if starts[-1] + size < len(kept):
        starts.append(len(kept) - size)
    windows: list[EvidenceWindow] = []
    for start in dict.fromkeys(starts):
        part = kept[start : start + size]
        windows.append(
            EvidenceWindow(part[0][0], part[-1][0], window_text([(a, t) for _, a, t in part]))
        )
    return windows


@dataclass(frozen=True, slots=True)
class WindowText:
    """A window without an embedding, with what its embedding's header names."""

    id: int
    text: str
    channel_name: str
    note_date: str
    title: str
    participants: tuple[str, ...]
