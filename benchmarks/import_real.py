"""Offline import speed on real conversations: the dev set's conversations written as exports
and imported by ``vivy import``'s own code with the offline provider.

    OPENBLAS_NUM_THREADS=1 python benchmarks/import_real.py [--conversations 2] [--dev-data PATH]

Prints the messages, the wall time and the process's CPU time, and messages per CPU-second,
which a loaded machine changes far less than messages per wall second.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

from vivy.config import Settings
from vivy.importer.replay import import_exports
from vivy.llm.offline import OfflineLLM
from vivy_lab.eval.longconv_dev import DEFAULT_DEV_PATH, load_dev, write_exports


def cpu_seconds() -> float:
    """User and system CPU time of this process so far, its threads included."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def main(path: Path, conversations: int) -> None:
    """Import the first ``conversations`` of the dev set into a new database; print figures."""
    dev = load_dev(path)
    llm = OfflineLLM()
    with tempfile.TemporaryDirectory(prefix="vivy-import-real-") as folder:
        exports = write_exports(dev, Path(folder) / "exports")[:conversations]
        messages = sum(len(json.loads(p.read_text())["messages"]) for p in exports)
        wall, cpu = time.perf_counter(), cpu_seconds()
        import_exports(exports, Settings(), llm=llm, database=Path(folder) / "import.db")
        wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    print(
        f"{messages} messages: wall {wall:.1f} s ({messages / wall:.1f} messages/s),"
        f" CPU {cpu:.1f} s ({messages / cpu:.1f} messages per CPU-second)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dev-data", type=Path, default=DEFAULT_DEV_PATH)
    parser.add_argument("--conversations", type=int, default=2)
    args = parser.parse_args()
    main(args.dev_data, args.conversations)
