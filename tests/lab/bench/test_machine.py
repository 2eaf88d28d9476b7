"""The benchmark's witnesses of the machine: its CPU counters and the share others used."""

from __future__ import annotations

import pytest

from vivy_lab.bench.machine import CpuTimes, others_percent, parse_cpu_times, read_cpu_times

#: A real first line of /proc/stat (user nice system idle iowait irq softirq steal guest
#: guest_nice), then a per-core line that must not be read.
STAT = "cpu  4000 100 900 20000 500 0 300 200 0 0\ncpu0 2000 50 450 10000 250 0 150 100 0 0\n"


def test_cpu_line_is_split_into_busy_and_total_seconds() -> None:
    """Idle and iowait are idle; user, nice, system, irq, softirq and steal are busy."""
    times = parse_cpu_times(STAT, ticks_per_second=100.0, own=2.5)
    assert times == CpuTimes(busy=55.0, total=260.0, own=2.5)


@pytest.mark.parametrize("text", ["", "intr 1 2 3\n", "cpu 1 2 3\n"])
def test_text_of_another_shape_is_refused(text: str) -> None:
    """Text that is not the cpu line of /proc/stat raises instead of giving a figure."""
    with pytest.raises(ValueError, match="cpu line"):
        parse_cpu_times(text, ticks_per_second=100.0)


def test_others_share_leaves_out_this_process() -> None:
    """Of 10 machine seconds, 6 busy of which 4 were ours: others used 20 %."""
    before = CpuTimes(busy=100.0, total=1000.0, own=1.0)
    after = CpuTimes(busy=106.0, total=1010.0, own=5.0)
    assert others_percent(before, after) == pytest.approx(20.0)
    # All the busy time ours, or counters that did not move: nobody else.
    assert others_percent(before, CpuTimes(busy=106.0, total=1010.0, own=7.5)) == 0.0
    assert others_percent(before, before) == 0.0
    # Without a reading (no /proc/stat) there is no share to give.
    assert others_percent(None, after) is None


def test_counters_of_this_machine_only_grow() -> None:
    """Where /proc/stat exists, two readings give busy within total, neither going back."""
    first = read_cpu_times()
    if first is None:
        pytest.skip("this machine has no /proc/stat")
    sum(range(200_000))  # some work between the readings
    second = read_cpu_times()
    assert second is not None
    assert 0.0 <= first.busy <= first.total
    assert second.busy >= first.busy and second.total >= first.total
