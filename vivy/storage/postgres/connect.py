"""The connections Vivy opens to PostgreSQL: their type and their time-outs.

A server that accepts a connection and never answers must not hang a command, so each
connection gives up after :func:`timeout` seconds of connecting (libpq's ``connect_timeout``),
and the server ends any one statement that runs longer (``statement_timeout``). The bulk
steps that legitimately run long (the migrations, ``vivy db copy``) lift the statement limit
for themselves. The time-out is ``VIVY_DB_TIMEOUT_SECONDS``, set once at the entry point by
:func:`set_timeout`.

A network partition delivers no statement time-out, so the kernel is asked to notice one on
TCP connections: keepalive probes start after :data:`KEEPALIVE_IDLE_S` idle seconds, and
data (a query, a probe) left unacknowledged for :data:`TCP_USER_TIMEOUT_MS` ends the
connection, where the kernel's defaults would wait 15 minutes or two hours. Unix-socket
connections ignore these parameters.
"""

from __future__ import annotations

import math
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "KEEPALIVE_COUNT",
    "KEEPALIVE_IDLE_S",
    "KEEPALIVE_INTERVAL_S",
    "TCP_USER_TIMEOUT_MS",
    "PgConnection",
    "explained",
    "set_timeout",
    "timeout",
    "with_timeouts",
]

#: The psycopg connection type handed to the engine's storage functions (rows are tuples).
PgConnection = psycopg.Connection[tuple[Any, ...]]

#: Seconds connecting, and any one statement, may take unless ``VIVY_DB_TIMEOUT_SECONDS``
#: says otherwise.
DEFAULT_TIMEOUT_S = 30

#: Idle seconds before the first TCP keepalive probe of a connection.
KEEPALIVE_IDLE_S = 5

#: Seconds between keepalive probes that went unanswered.
KEEPALIVE_INTERVAL_S = 2

#: Unanswered keepalive probes after which the connection is dead.
KEEPALIVE_COUNT = 3

#: Milliseconds sent data may stay unacknowledged before the kernel ends the connection.
TCP_USER_TIMEOUT_MS = 10_000

_timeout_s = DEFAULT_TIMEOUT_S


def set_timeout(seconds: int) -> None:
    """Use ``seconds`` as the time-out of every connection opened from now on."""
    global _timeout_s
    if seconds < 1:
        raise ValueError(f"a time-out is at least one second, not {seconds}")
    _timeout_s = seconds


def timeout() -> int:
    """The time-out connections are opened with, in seconds."""
    return _timeout_s


def with_timeouts(
    uri: str,
    *,
    read_only: bool = False,
    bounded: bool = True,
    connect_timeout_s: float | None = None,
) -> str:
    """``uri`` as a connection string that gives up after :func:`timeout` seconds of
    connecting (``connect_timeout_s`` when given), limits each statement to as long unless
    not ``bounded``, makes transactions read-only when ``read_only``, and has the kernel end
    the connection when the server stops acknowledging; the URL's own options are kept."""
    given = str(conninfo_to_dict(uri).get("options") or "")
    options = [given] if given else []
    if bounded:
        options.append(f"-c statement_timeout={_timeout_s * 1000}")
    if read_only:
        options.append("-c default_transaction_read_only=on")
    connecting = _timeout_s if connect_timeout_s is None else connect_timeout_s
    return make_conninfo(
        uri,
        options=" ".join(options) or None,
        connect_timeout=str(max(math.ceil(connecting), 2)),
        keepalives="1",
        keepalives_idle=str(KEEPALIVE_IDLE_S),
        keepalives_interval=str(KEEPALIVE_INTERVAL_S),
        keepalives_count=str(KEEPALIVE_COUNT),
        tcp_user_timeout=str(TCP_USER_TIMEOUT_MS),
    )


def explained(message: str) -> str:
    """libpq's ``message`` about a failed connection, a time-out in Vivy's words."""
    if "timeout expired" not in message:
        return message
    return (
        f"no answer within {_timeout_s} s (VIVY_DB_TIMEOUT_SECONDS); check the host and port, "
        "and that the PostgreSQL server there is up"
    )
