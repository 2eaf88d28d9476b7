"""Benchmarks of Vivy's hot paths, run by hand (``vivy bench ...``), never as timed tests."""

from __future__ import annotations

__all__: list[str] = []
