"""Subcommands of the ``vivy`` command line, one module each (see :mod:`vivy.cli`)."""

from __future__ import annotations

__all__: list[str] = []
