"""The time-outs of every connection Vivy opens to PostgreSQL.

A server that accepts a connection and never answers must not hang a command, so each
connection gives up after :func:`timeout` seconds of connecting (libpq's ``connect_timeout``),
and the server ends any one statement that runs longer (``statement_timeout``). The bulk
steps that legitimately run long (the migrations, ``vivy db copy``) lift the statement limit
for themselves. The time-out is ``VIVY_DB_TIMEOUT_SECONDS``, set once at the entry point by
:func:`set_timeout`.
"""

from __future__ import annotations

from psycopg.conninfo import conninfo_to_dict, make_conninfo

__all__ = ["DEFAULT_TIMEOUT_S", "explained", "set_timeout", "timeout", "with_timeouts"]

#: Seconds connecting, and any one statement, may take unless ``VIVY_DB_TIMEOUT_SECONDS``
#: says otherwise.
DEFAULT_TIMEOUT_S = 30

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


def with_timeouts(uri: str, *, read_only: bool = False, bounded: bool = True) -> str:
    """``uri`` as a connection string that gives up after :func:`timeout` seconds of
    connecting, limits each statement to as long unless not ``bounded``, and makes
    transactions read-only when ``read_only``; the URL's own options are kept."""
    given = str(conninfo_to_dict(uri).get("options") or "")
    options = [given] if given else []
    if bounded:
        options.append(f"-c statement_timeout={_timeout_s * 1000}")
    if read_only:
        options.append("-c default_transaction_read_only=on")
    return make_conninfo(
        uri, options=" ".join(options) or None, connect_timeout=str(max(_timeout_s, 2))
    )


def explained(message: str) -> str:
    """libpq's ``message`` about a failed connection, a time-out in Vivy's words."""
    if "timeout expired" not in message:
        return message
    return (
        f"no answer within {_timeout_s} s (VIVY_DB_TIMEOUT_SECONDS); check the host and port, "
        "and that the PostgreSQL server there is up"
    )
