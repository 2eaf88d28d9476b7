"""The long-conversation eval on the whole bundled set: a module of its own, so that the
worker making the set's report (``full_long_report``, the longest fixture of the run) runs
nothing else meanwhile and the small subset's tests run beside it."""

from __future__ import annotations

from vivy_lab.eval.longconv import LongReport, below_baseline, short_of_goals


def test_full_set_beats_every_baseline_at_every_k_and_kind(full_long_report: LongReport) -> None:
    """On the whole bundled set, with the local embedding model, the shipped retriever is at
    or above every baseline (BM25 raw and sessions, dense, RRF) at 1, 5 and 10, overall and
    in every question kind, and strictly above its own keyword-only path at 5."""
    full = full_long_report
    assert below_baseline(full) == []
    assert short_of_goals(full, targets=False) == []
    assert full.empty_with_words == 0
