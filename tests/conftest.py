"""Shared fixtures: by default async tests run on trio under a MockClock that autojumps."""

from __future__ import annotations

from typing import Any

import pytest
from trio.testing import MockClock


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    """Trio with a virtual clock: timers fire at exact virtual times, instantly."""
    return ("trio", {"clock": MockClock(autojump_threshold=0)})
