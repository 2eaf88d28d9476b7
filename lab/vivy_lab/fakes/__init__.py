"""Loopback stand-ins for the LLM providers' HTTP APIs, for tests and benchmarks."""

from __future__ import annotations

__all__: list[str] = []
