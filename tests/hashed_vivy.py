"""``python -m tests.hashed_vivy ARGS`` runs ``vivy ARGS`` through its real entry point with the
tests' hashing embedder in place of the local sentence model (as ``tests/conftest.py`` does in
process), for child processes whose test is not about the model's meaning."""

from __future__ import annotations

import sys

import pytest

from tests.hashing import install_hashed_sentences
from vivy.cli import main

if __name__ == "__main__":
    install_hashed_sentences(pytest.MonkeyPatch())
    sys.exit(main())
