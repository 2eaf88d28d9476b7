"""Synthetic notes at scale for the retrieval benchmark, on SQLite and copied into PostgreSQL."""

from __future__ import annotations

__all__: list[str] = []
