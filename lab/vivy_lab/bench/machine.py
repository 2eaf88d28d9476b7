"""How fast and how busy the machine was while a benchmark timed its work.

Latency targets hold "on an idle machine", and a shared VM is seldom idle for an hour: the same
code's p50 moved by a third between runs. So a benchmark row carries two witnesses taken when
its timings were: :func:`loop_ms`, the speed of one core on a fixed Python loop, and
:func:`others_percent` between two :func:`read_cpu_times`, the share of the machine's CPU
time that went to anything but this process (other processes and the hypervisor's steal)
while the row was timed.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "LOOP_STEPS",
    "CpuTimes",
    "loop_ms",
    "others_percent",
    "parse_cpu_times",
    "read_cpu_times",
]

#: Steps of the loop :func:`loop_ms` times.
LOOP_STEPS = 1_000_000

#: Where Linux keeps the machine's CPU time counters.
PROC_STAT = Path("/proc/stat")


def loop_ms() -> float:
    """Milliseconds a million-step Python loop takes (median of three): searches are
    CPU-bound, and a shared machine's speed moves by two to three times within an hour."""
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for step in range(LOOP_STEPS):
            total += step
        runs.append(time.perf_counter() - started)
    return statistics.median(runs) * 1000


@dataclass(frozen=True, slots=True)
class CpuTimes:
    """CPU seconds: the machine's since boot, summed over every core (busy, steal included,
    and in all), and this process's own (all its threads)."""

    busy: float
    total: float
    own: float = 0.0


def parse_cpu_times(stat: str, ticks_per_second: float, own: float = 0.0) -> CpuTimes:
    """The machine's CPU times from the text of ``/proc/stat`` (its first, ``cpu`` line),
    with ``own`` as this process's seconds.

    Idle and iowait are the idle time; user, nice, system, irq, softirq and steal are busy
    (guest time is already inside user). Raises ValueError on text of another shape.
    """
    fields = stat.split("\n", 1)[0].split()
    if len(fields) < 9 or fields[0] != "cpu":
        raise ValueError("the first line of /proc/stat is not the machine's cpu line")
    user, nice, system, idle, iowait, irq, softirq, steal = (int(v) for v in fields[1:9])
    busy = user + nice + system + irq + softirq + steal
    return CpuTimes(busy / ticks_per_second, (busy + idle + iowait) / ticks_per_second, own)


def read_cpu_times() -> CpuTimes | None:
    """The CPU times now; None where ``/proc/stat`` cannot be read (not Linux)."""
    times = os.times()
    try:
        stat = PROC_STAT.read_text()
        return parse_cpu_times(stat, float(os.sysconf("SC_CLK_TCK")), times.user + times.system)
    except (OSError, ValueError):
        return None


def others_percent(before: CpuTimes | None, after: CpuTimes | None) -> float | None:
    """The share (percent) of the machine's CPU time between two readings that went to
    anything but this process: 0 on an idle machine; None without both readings. The
    counters tick a hundred times a second, so a few seconds read to about a percent."""
    if before is None or after is None:
        return None
    total = after.total - before.total
    if total <= 0:
        return 0.0
    others = (after.busy - before.busy) - (after.own - before.own)
    return min(100.0, max(0.0, 100.0 * others / total))
