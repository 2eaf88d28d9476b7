"""The long-conversation eval of the whole bundled set, run once for the tests that read it."""

from __future__ import annotations

import anyio
import pytest

from tests.hashing import remembered_sentence_model
from vivy_lab.eval.longconv import LongReport, load_longconv, run_longconv


@pytest.fixture(scope="session")
def full_long_report() -> LongReport:
    """``vivy eval``'s long-conversation report of the bundled set with the offline model
    (its local sentence model: the figures are retrieval quality; vectors the small subset's
    reports embedded are not embedded again)."""
    with remembered_sentence_model():
        return anyio.run(run_longconv, None, load_longconv())
