"""Logging set-up, done once at the entry point (structlog's best practice).

Logs go to stderr: human-readable on a terminal, JSON lines otherwise. Ids (guild, channel,
buffer, note, user) are bound by the actors as key-value pairs; message text is never logged
at INFO or above. Tracebacks are shown at the debug level only: above it, an event's exception
is shortened to one ``error`` field (its type and message), so a failure stays one line.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

__all__ = ["configure_logging"]


def configure_logging(level: str = "info", *, json: bool | None = None) -> None:
    """Configure structlog (and the standard library's root logger) for ``level`` and up."""
    as_json = not sys.stderr.isatty() if json is None else json
    processors: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if level.lower() != "debug":
        processors.append(_brief_exception)
    if as_json:
        processors += [structlog.processors.dict_tracebacks, structlog.processors.JSONRenderer()]
    else:
        processors.append(structlog.dev.ConsoleRenderer())
    number = logging.getLevelNamesMapping()[level.upper()]
    # Libraries log through the standard library (hikari's retries, for one): same threshold.
    logging.getLogger().setLevel(number)
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(number),
        # Resolve sys.stderr at each use, so a replaced stream (tests, daemons) is honoured.
        logger_factory=lambda *_: structlog.PrintLogger(sys.stderr),
        cache_logger_on_first_use=False,
    )


def _brief_exception(
    _logger: Any, _method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Replace an event's exception (and its traceback) by ``error``: its type and message."""
    exc_info = event.pop("exc_info", None)
    if exc_info is True:
        exc_info = sys.exc_info()
    if isinstance(exc_info, tuple):
        exc_info = exc_info[1]
    if isinstance(exc_info, BaseException):
        event.setdefault("error", f"{type(exc_info).__name__}: {exc_info}")
    return event
