"""Shared fixtures: by default async tests run on trio under a MockClock that autojumps, and
embed sentences with the hashing test double unless marked ``sentence_model``."""

from __future__ import annotations

import os

# One BLAS thread per process, for this process and every child it starts (set before numpy
# loads): the sentence model multiplies small matrices, and on a busy 2-core machine
# OpenBLAS's spinning threads made each single-text embedding several times slower.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import gc
import logging
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from trio.testing import MockClock

from tests.hashing import install_hashed_sentences, sentence_model

#: The modules whose tests take longest, longest first. They start first, so that under
#: ``pytest -n 2 --dist loadscope`` (``scripts/check``) one worker runs them while the other
#: runs the many short modules, rather than one of them starting last and running alone.
LONG_MODULES = (
    "tests/lab/eval/test_longconv_full.py",
    "tests/test_readme.py",
    "tests/lab/eval/test_longconv.py",
    "tests/commands/test_errors.py",
    "tests/bot/test_catchup.py",
    "tests/commands/test_db_copy.py",
    "tests/web/test_browser.py",
    "tests/bot/test_providers.py",
    "tests/commands/test_demo.py",
    "tests/memory/test_guards.py",
    "tests/lab/eval/test_notes.py",
    "tests/importer/test_import_weather.py",
    "tests/reliability/test_weather.py",
    "tests/test_docs.py",
    "tests/commands/test_filesystem_errors.py",
    "tests/reliability/test_crash.py",
    "tests/test_packaging.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the tests of :data:`LONG_MODULES` first, in that order; the rest keep theirs."""
    rank = {module: index for index, module in enumerate(LONG_MODULES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    """Trio with a virtual clock: timers fire at exact virtual times, instantly."""
    return ("trio", {"clock": MockClock(autojump_threshold=0)})


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``sentence_model`` marker."""
    config.addinivalue_line(
        "markers",
        "sentence_model: the test is about the local sentence model's embeddings (retrieval"
        " quality, the model itself): the offline provider embeds with it, not the hashing"
        " double",
    )


@pytest.fixture(scope="session", autouse=True)
def _hashed_sentences() -> Iterator[None]:
    """For the whole session (session and module fixtures included), in-process offline
    providers and the lab's synthetic guilds embed sentences with the hashing double: fast,
    and deterministic."""
    with pytest.MonkeyPatch.context() as patch:
        install_hashed_sentences(patch)
        yield


@pytest.fixture(autouse=True)
def _sentence_model(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked ``sentence_model`` embeds with the local model (loaded once per
    process); a fixture that needs it opens :func:`tests.hashing.sentence_model` itself."""
    if request.node.get_closest_marker("sentence_model") is None:
        yield
        return
    with sentence_model():
        yield


@pytest.fixture(autouse=True)
def _fresh_structlog() -> Iterator[None]:
    """Undo any logging configuration a test made (the CLI configures it once per run):
    structlog's, and the root logger's handlers, level and capture of warnings."""
    root = logging.getLogger()
    level = root.level
    yield
    structlog.reset_defaults()
    for handler in [h for h in root.handlers if type(h).__name__ == "_StderrHandler"]:
        root.removeHandler(handler)
    root.setLevel(level)
    logging.captureWarnings(False)


@pytest.fixture(autouse=True)
def _restored_collector() -> Iterator[None]:
    """Put back the collector's threshold after a test that ran ``settle_heap()`` (the CLI
    runs it once per process). What it froze stays frozen: refcounting still frees it, and
    the next test's ``settle_heap()`` then collects only what was made since, not the whole
    worker's heap again."""
    threshold = gc.get_threshold()
    yield
    if gc.get_threshold() != threshold:
        gc.set_threshold(*threshold)


# The embedded PostgreSQL server and a fresh schema on it, for any test that needs the engine.
from tests.pg import pg_server, pg_uri  # noqa: E402, F401
