"""A memory page over a database made by importing the bundled demo export, on each engine."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from tests.pg import ENGINES
from tests.web.threaded import ThreadedServer
from vivy.clock import Clock
from vivy.commands.demo import DEMO_EXPORT
from vivy.config import Settings
from vivy.importer import import_exports, load_exports
from vivy.llm.offline import OfflineLLM
from vivy.retrieval import Retriever
from vivy.storage.engines import Target, open_store
from vivy.storage.port import Store
from vivy.web.memory import StoreMemory

#: The operator's token, and a server manager's (labelled ``alice``) for every guild.
OPERATOR_TOKEN = "operator-token-0123456789"
MANAGER_TOKEN = "alice-token-0123456789abcdef"
#: A manager whose token sees another guild only.
STRANGER_TOKEN = "stranger-token-0123456789ab"


@dataclass
class DemoPage:
    """A running memory page over the imported demo."""

    server: ThreadedServer
    store: Store
    guild: int
    engine: str


@pytest.fixture(scope="session")
def imported_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo export imported on SQLite once for the session (copied by each test, which
    may correct what it reads)."""
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    _import_demo(path)
    return path


@pytest.fixture(params=ENGINES)
def demo_page(
    request: pytest.FixtureRequest, tmp_path: Path, imported_demo: Path
) -> Iterator[DemoPage]:
    """The demo export imported on SQLite or PostgreSQL, served by an OperatorServer."""
    if request.param == "postgres":
        url = request.getfixturevalue("pg_uri")
        _import_demo(url)
        with serving_demo(url) as page:
            yield page
    else:
        with serving_demo(_copied(imported_demo, tmp_path)) as page:
            yield page


@pytest.fixture
def sqlite_page(tmp_path: Path, imported_demo: Path) -> Iterator[DemoPage]:
    """The demo export imported on SQLite, served by an OperatorServer."""
    with serving_demo(_copied(imported_demo, tmp_path)) as page:
        yield page


def _import_demo(database: Target) -> None:
    """Import the demo export into ``database``, as ``vivy demo`` does."""
    settings = Settings.from_env({}).with_target(database)
    import_exports([DEMO_EXPORT], settings, llm=OfflineLLM, registry=CollectorRegistry())


def _copied(path: Path, tmp_path: Path) -> Path:
    """A copy of the SQLite database ``path`` in the test's own ``tmp_path``."""
    copy = tmp_path / path.name
    shutil.copyfile(path, copy)
    return copy


@contextmanager
def serving_demo(database: Target) -> Iterator[DemoPage]:
    """Serve the page of the demo imported into ``database`` (a SQLite file or a
    PostgreSQL URL)."""
    url = None if isinstance(database, Path) else database
    guild = load_exports([DEMO_EXPORT]).messages[0].guild_id
    server = ThreadedServer(
        CollectorRegistry(),
        port=0,
        bearer_token=OPERATOR_TOKEN,
        page_tokens=f"alice=*:{MANAGER_TOKEN} stranger=1:{STRANGER_TOKEN}",
    )
    store = open_store(database)
    llm = OfflineLLM()

    async def serve() -> None:
        clock = Clock.wall()
        server.serve_page(StoreMemory(store, Retriever(store.search, llm, clock), now=clock.now))

    with server:
        server.call(serve)
        try:
            yield DemoPage(server, store, guild, "sqlite" if url is None else "postgres")
        finally:
            server.call(llm.aclose)
            store.close()
