"""One gateway run of ``vivy bench ingest``, for counting the instructions a message costs.

Wall-clock figures on a shared machine drift by a third within a minute; instruction counts
do not. Run this under callgrind twice and divide the difference by the messages::

    valgrind --tool=callgrind python benchmarks/ingest_instructions.py 20000
    valgrind --tool=callgrind python benchmarks/ingest_instructions.py 1

(``I refs`` of the first minus the second, over 19,999: start-up and imports cancel out.) The
messages are those of ``vivy bench ingest`` (200 channels, in arrival order), sent by its
gateway sender with 4,096 in flight after the heap is settled as ``vivy run`` settles it.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import anyio

from vivy.heap import settle_heap
from vivy_lab.bench.ingest import GATEWAY_WINDOW, _arrival_order, _run_gateway, _traffic


def main(count: int) -> None:
    """Send the first ``count`` messages of the 200 × 100 traffic through the gateway sender."""
    arrivals = _arrival_order(_traffic(200, 100))[:count]
    settle_heap()

    async def run() -> None:  # returns nothing: asyncio would repr a returned result
        with tempfile.TemporaryDirectory(prefix="vivy-instructions-") as tmp:
            await _run_gateway(arrivals, Path(tmp) / "ingest.db", GATEWAY_WINDOW)

    anyio.run(run, backend="asyncio")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000)
