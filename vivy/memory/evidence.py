"""A note's evidence: the messages it was written from, and the overlapping windows of
consecutive lines they are searched by.

A window's embedding is pooled from its lines' embeddings and its note's (:func:`pooled_windows`):
each line is embedded once, though the windows overlap, which halves what writing a note's
evidence costs the embedding model, and the note's vector gives every window the context
(channel, day, people, topic) a line alone lacks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "WINDOW_SIZE",
    "WINDOW_STRIDE",
    "EvidenceLine",
    "EvidenceWindow",
    "PendingMessage",
    "ScoredLine",
    "WindowText",
    "pooled_windows",
    "window_lines",
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
class ScoredLine:
    """An evidence line chosen for a question, with how well it answers it (the higher the
    better; scores of one search compare across its notes)."""

    line: EvidenceLine
    score: float


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
    """A window without an embedding: its id, its lines (:func:`window_text`) and its note's
    vector (None when the note has none), which its pooled embedding takes in."""

    id: int
    text: str
    note_vector: tuple[float, ...] | None = None


def window_lines(texts: Sequence[str]) -> list[str]:
    """The distinct lines of windows' ``texts`` (:func:`window_text`), in order: what is
    embedded for them, each line once."""
    return list(dict.fromkeys(line for text in texts for line in text.split("\n")))


#: How much of its note's unit vector a window's pooled vector takes in, beside the mean of
#: its lines' unit vectors (measured on the real dev conversations: with it, windows pooled
#: from lines find the answering session as often as windows embedded whole with a header).
NOTE_CONTEXT = 0.5


def pooled_windows(
    texts: Sequence[str],
    lines: Sequence[str],
    vectors: Sequence[Sequence[float]],
    notes: Sequence[Sequence[float] | None],
) -> list[list[float]]:
    """Each window's embedding: the normalised mean of its lines' unit vectors plus
    :data:`NOTE_CONTEXT` times its note's unit vector (``notes``, one per text; when known
    and of the lines' length: a note left on another model adds nothing), the lines'
    ``vectors`` given in the order of ``lines`` (:func:`window_lines` of ``texts``)."""
    if len(lines) != len(vectors):
        raise ValueError(f"{len(vectors)} vectors for {len(lines)} lines")
    if not texts:
        return []
    matrix = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    row = {line: index for index, line in enumerate(lines)}
    pooled: list[list[float]] = []
    for text, note in zip(texts, notes, strict=True):
        mean = matrix[[row[line] for line in text.split("\n")]].mean(axis=0)
        if note is not None and len(note) == matrix.shape[1]:
            context = np.asarray(note, dtype=np.float64)
            size = float(np.linalg.norm(context))
            mean += NOTE_CONTEXT * context / size if size > 0 else context
        size = float(np.linalg.norm(mean))
        pooled.append((mean / size if size > 0 else mean).tolist())
    return pooled
