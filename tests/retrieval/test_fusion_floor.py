"""The fusion never ranks below its keyword side when the embedding is weak: with the hashing
test double (words hashed into buckets, no meaning beyond the words) as the embedding, the
shipped ranking's session recall is at or above its keyword-only path's at every k."""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.hashing import HashingEmbedder
from vivy.llm.offline import OfflineLLM
from vivy_lab.eval.longconv import KS, load_longconv, run_longconv

SMALL = Path(__file__).parents[1] / "lab" / "eval" / "longconv_small.json"


def test_a_meaningless_embedding_does_not_drag_the_ranking_below_keywords() -> None:
    llm = OfflineLLM(embedder=HashingEmbedder())
    report = anyio.run(run_longconv, llm, load_longconv(SMALL))
    shipped, keywords = report.recall["shipped"], report.recall["keyword_only"]
    assert report.questions > 0
    for k in KS:
        assert shipped[k] >= keywords[k], (k, shipped[k], keywords[k])
