"""Pure state machines: they decide, and do no I/O, no clock reads and no logging."""

from __future__ import annotations

__all__: list[str] = []
