"""Long-lived anyio tasks that feed the state machines events and carry out their effects."""

from __future__ import annotations

__all__: list[str] = []
