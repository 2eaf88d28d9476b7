"""``python -m tests.hashed_vivy ARGS`` runs ``vivy ARGS`` through its real entry point with the
tests' hashing embedder in place of the local sentence model (as ``tests/conftest.py`` does in
process), for child processes whose test is not about the model's meaning."""

from __future__ import annotations

import sys

from tests.hashing import hashed_sentences
from vivy.cli import main
from vivy.llm.offline import provider

if __name__ == "__main__":
    # A child process of its own: nothing to undo, so no pytest to import for its patching.
    provider.shared_embedder = hashed_sentences
    sys.exit(main())
