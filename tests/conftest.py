"""Shared fixtures: by default async tests run on trio under a MockClock that autojumps."""

from __future__ import annotations

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
    """Undo any logging configuration a test made (the CLI configures it once per run)."""
    yield
    structlog.reset_defaults()
