"""Ordering the first notes of a search again by the lines they quote."""

from __future__ import annotations

from tests.retrieval.test_context import note
from vivy.memory.evidence import EvidenceLine, ScoredLine
from vivy.retrieval.ranked import REORDERED, NoteHit, by_best_line


def hit(note_id: int, score: float, best_line: float | None) -> NoteHit:
    """A found note with ``score`` and, unless None, a quoted line scoring ``best_line``."""
    lines = (
        ()
        if best_line is None
        else (ScoredLine(EvidenceLine(note_id, note_id, 1, "Alex", "hi", 0.0), best_line),)
    )
    return NoteHit(note(note_id, "2026-01-01", "t", "s"), score, None, None, lines)


def test_the_note_quoting_the_answering_line_comes_first() -> None:
    """Among the first notes, score plus ``line_weight`` times the best line's score orders
    them; with no weight the ranked order stays."""
    hits = [hit(1, 0.8, 0.2), hit(2, 0.7, 0.6), hit(3, 0.6, 0.3)]
    assert [h.note.id for h in by_best_line(hits, 1.0)] == [2, 1, 3]
    assert [h.note.id for h in by_best_line(hits, 0.0)] == [1, 2, 3]
    assert [h.score for h in by_best_line(hits, 1.0)] == [0.7, 0.8, 0.6]


def test_notes_without_lines_and_past_the_first_keep_their_places() -> None:
    """A note that quotes nothing keeps its place (the others move around it), and notes
    after the first :data:`REORDERED` are not moved, whatever their lines."""
    hits = [hit(1, 0.9, 0.0), hit(2, 0.8, None), hit(3, 0.7, 0.9)]
    assert [h.note.id for h in by_best_line(hits, 1.0)] == [3, 2, 1]
    tail = [hit(10 + index, 0.5 - 0.01 * index, 0.0) for index in range(REORDERED)]
    late = [*tail, hit(99, 0.1, 5.0)]
    assert [h.note.id for h in by_best_line(late, 1.0)] == [h.note.id for h in late]
