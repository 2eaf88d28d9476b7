"""The raw baselines ``vivy bench ingest`` measures Vivy's ingest path against, per engine."""

from __future__ import annotations

__all__: list[str] = []
