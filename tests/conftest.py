"""Shared fixtures: by default async tests run on trio under a MockClock that autojumps."""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from trio.testing import MockClock


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    """Trio with a virtual clock: timers fire at exact virtual times, instantly."""
    return ("trio", {"clock": MockClock(autojump_threshold=0)})


@pytest.fixture(autouse=True)
def _fresh_structlog() -> Iterator[None]:
    """Undo any logging configuration a test made (the CLI configures it once per run):
    structlog's, and the root logger's handlers, level and capture of warnings."""
    root = logging.getLogger()
    level = root.level
    yield
    structlog.reset_defaults()
    for handler in [h for h in root.handlers if type(h).__name__ == "_StderrHandler"]:
        root.removeHandler(handler)
    root.setLevel(level)
    logging.captureWarnings(False)


@pytest.fixture(autouse=True)
def _restored_collector() -> Iterator[None]:
    """Undo a ``settle_heap()`` a test ran (the CLI runs it once per process)."""
    threshold = gc.get_threshold()
    yield
    if gc.get_threshold() != threshold:
        gc.unfreeze()
        gc.set_threshold(*threshold)


# The embedded PostgreSQL server and a fresh schema on it, for any test that needs the engine.
from tests.pg import pg_server, pg_uri  # noqa: E402, F401
