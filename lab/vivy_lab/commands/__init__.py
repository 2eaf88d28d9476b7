"""The subcommands the lab adds to ``vivy`` through the ``vivy.commands`` entry points."""

from __future__ import annotations

__all__: list[str] = []
