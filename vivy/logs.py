"""Logging set-up, done once at the entry point (structlog's best practice).

Logs go to stderr in one format: human-readable on a terminal, JSON lines otherwise. Vivy logs
through structlog; the libraries it uses (hikari, aiohttp, psycopg, ...) log through the
standard library, whose records are rendered by the same processors through one root handler,
so a ``vivy run`` log never mixes formats. Python's warnings become log records too.

Ids (guild, channel, buffer, note, user) are bound by the actors as key-value pairs; message
text is never logged at INFO or above. Tracebacks are shown at the debug level only: above it,
an event's exception is shortened to one ``error`` field (its type and message), so a failure
stays one line.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog

__all__ = ["configure_logging"]


def configure_logging(level: str = "info", *, json: bool | None = None) -> None:
    """Configure structlog and the standard library's root logger for ``level`` and up.

    Calling it again replaces the earlier configuration (the command line configures logging
    once before the settings are read and once after).
    """
    as_json = not sys.stderr.isatty() if json is None else json
    shared: list[structlog.typing.Processor] = [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if level.lower() != "debug":
        shared.append(_brief_exception)
    renderer: list[structlog.typing.Processor] = (
        [structlog.processors.dict_tracebacks, structlog.processors.JSONRenderer()]
        if as_json
        else [structlog.dev.ConsoleRenderer()]
    )
    number = logging.getLevelNamesMapping()[level.upper()]
    structlog.configure(
        processors=[structlog.contextvars.merge_contextvars, *shared, *renderer],
        wrapper_class=structlog.make_filtering_bound_logger(number),
        # Resolve sys.stderr at each use, so a replaced stream (tests, daemons) is honoured.
        logger_factory=lambda *_: structlog.PrintLogger(sys.stderr),
        cache_logger_on_first_use=False,
    )
    handler = _StderrHandler()
    handler.addFilter(_drop_repeated_errors)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[structlog.stdlib.add_logger_name, _one_line, *shared],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *renderer],
        )
    )
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(number)
    logging.captureWarnings(True)


#: Records of libraries that only repeat an error Vivy already reports in its own words:
#: (logger name, start of the message). psycopg logs the error it ignored while ending a
#: pipeline that another exception (an interrupt, a lost connection) was leaving.
_REPEATED_ERRORS = (("psycopg", "error ignored "),)


def _drop_repeated_errors(record: logging.LogRecord) -> bool:
    """Whether ``record`` is worth showing (see :data:`_REPEATED_ERRORS`)."""
    return not any(
        record.name == name and str(record.msg).startswith(start)
        for name, start in _REPEATED_ERRORS
    )


class _StderrHandler(logging.StreamHandler[TextIO]):
    """Writes to whatever ``sys.stderr`` is at the time of each record."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        """The current ``sys.stderr``."""
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        """Ignored: the stream is always the current ``sys.stderr``."""


def _one_line(
    _logger: Any, _method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A library's message without the line breaks some add (a warning's source line)."""
    if isinstance(event.get("event"), str):
        event["event"] = " ".join(event["event"].split())
    return event


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
