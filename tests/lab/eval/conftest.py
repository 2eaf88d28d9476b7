"""The long-conversation eval of the whole bundled set, run once for the tests that read it."""

from __future__ import annotations

import fcntl
import os
import pickle

import anyio
import pytest

from tests.hashing import remembered_sentence_model
from vivy_lab.eval.longconv import LongReport, load_longconv, run_longconv


def _long_report() -> LongReport:
    with remembered_sentence_model():
        return anyio.run(run_longconv, None, load_longconv())


@pytest.fixture(scope="session")
def full_long_report(tmp_path_factory: pytest.TempPathFactory) -> LongReport:
    """``vivy eval``'s long-conversation report of the bundled set with the offline model
    (its local sentence model: the figures are retrieval quality; vectors the small subset's
    reports embedded are not embedded again).

    Made once per run: under pytest-xdist, where each worker has its own session, the first
    worker to ask makes it and leaves it pickled in the run's temporary directory (shared by
    the workers, new each run); the others wait for it and read it."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return _long_report()
    shared = tmp_path_factory.getbasetemp().parent / "full_long_report.pickle"
    with shared.with_suffix(".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if shared.exists():
            report: LongReport = pickle.loads(shared.read_bytes())
            return report
        report = _long_report()
        shared.write_bytes(pickle.dumps(report))
        return report
