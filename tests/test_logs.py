"""One log format: Vivy's structlog events and the libraries' standard-library records alike."""

from __future__ import annotations

import json
import logging
import warnings

import psycopg
import pytest
import structlog

from vivy.logs import configure_logging


def _emit() -> None:
    """A library's warning, Vivy's own event, and a library's debug record."""
    logging.getLogger("hikari.rest").warning("Connection error (%s), retrying", "Timeout")
    structlog.get_logger().info("vivy started", llm="offline")
    logging.getLogger("hikari.gateway").debug("a heartbeat")


def test_library_records_are_json_like_vivys_own(capsys: pytest.CaptureFixture[str]) -> None:
    """Off a terminal every line is one JSON object with event, level and timestamp, the
    library's with its logger's name; records under the level are dropped."""
    configure_logging("info", json=True)
    _emit()
    lines = capsys.readouterr().err.splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["event"] for e in events] == ["Connection error (Timeout), retrying", "vivy started"]
    assert events[0]["logger"] == "hikari.rest" and events[0]["level"] == "warning"
    assert all({"event", "level", "timestamp"} <= set(e) for e in events)


def test_library_records_take_the_console_format_on_a_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """On a terminal both come in structlog's console format, neither as JSON."""
    configure_logging("info", json=False)
    _emit()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    assert all("warning" in lines[0] or "info" in line for line in lines)
    assert not any(line.startswith("{") for line in lines)


def test_configuring_again_does_not_repeat_lines(capsys: pytest.CaptureFixture[str]) -> None:
    """The command line configures logging twice; each record is still written once."""
    configure_logging("warning", json=True)
    configure_logging("info", json=True)
    logging.getLogger("aiohttp").info("once")
    assert capsys.readouterr().err.count('"once"') == 1


def test_a_library_exception_is_one_line_above_debug(capsys: pytest.CaptureFixture[str]) -> None:
    """A library's exception is shortened to its type and message, without a traceback."""
    configure_logging("info", json=True)
    try:
        raise ConnectionError("reset by peer")
    except ConnectionError:
        logging.getLogger("psycopg").exception("connection lost")
    (line,) = capsys.readouterr().err.splitlines()
    assert json.loads(line)["error"] == "ConnectionError: reset by peer"


def test_python_warnings_are_log_records(capsys: pytest.CaptureFixture[str]) -> None:
    """A Python warning comes out as one JSON log line, not the warnings module's text."""
    configure_logging("info", json=True)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("a deprecated call", DeprecationWarning, stacklevel=1)
    (line,) = capsys.readouterr().err.splitlines()
    event = json.loads(line)
    assert event["logger"] == "py.warnings" and "a deprecated call" in event["event"]


def test_psycopg_teardown_noise_after_an_interrupt_is_dropped(
    pg_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An interrupt inside a psycopg pipeline (as in ``vivy db copy``'s batches) makes psycopg
    log the error it ignored while ending the pipeline; Vivy reports the interrupt itself, so
    that record is not shown. psycopg's other warnings are."""
    configure_logging("warning", json=True)
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        with pytest.raises(KeyboardInterrupt), conn.pipeline():
            conn.execute("SELECT 1 / 0")
            raise KeyboardInterrupt
        logging.getLogger("psycopg").warning("connection %s lost", "x")
    lines = capsys.readouterr().err.splitlines()
    assert [json.loads(line)["event"] for line in lines] == ["connection x lost"]
