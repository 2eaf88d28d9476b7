"""Offline retrieval evals: recall@k over note summaries (:mod:`~vivy_lab.eval.notes`) and
over long conversations against a plain BM25 baseline (:mod:`~vivy_lab.eval.longconv`)."""

from __future__ import annotations

__all__: list[str] = []
