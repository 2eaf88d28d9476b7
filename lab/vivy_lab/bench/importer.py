"""``vivy bench import``: how long ``vivy import`` takes, against messages and model calls.

It generates a history (by default two years, 20,000 messages, 5 channels, conversations
days apart with two to four of twelve members each, a fifth of the lines about the speaker
themselves) as DiscordChatExporter files and imports it into fresh databases:

* with the offline provider, once as generated and once with the conversations spread over
  ten times the calendar span (the same conversations, ten times further apart): the wall
  time must not grow with the calendar;
* with a loopback fake Gemini answering after ``--latency`` seconds, through the real SDK
  and :class:`~vivy.importer.RealTimeLLM`, ``--concurrency`` calls in flight; the expected
  wall time is calls × latency ÷ calls in flight;
* interrupted once 60 % of the messages are fed (the process state is lost, as in a kill;
  what was committed stays), then run again: the re-run's share of a fresh import's time.

Figures are printed one ``name: value`` a line, prefixed by the run they belong to.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from vivy.commands.db import quiet_logs
from vivy.config import Settings
from vivy.importer import ImportProgress, ImportReport, RealTimeLLM, import_exports
from vivy.llm import GeminiLLM
from vivy.llm.gemini import GeminiConfig
from vivy.llm.offline import OfflineLLM
from vivy.llm.port import LLM
from vivy_lab.fakes.gemini import FakeGemini, schema_route

__all__ = ["History", "generate", "main", "write_exports"]

GUILD = 940000000000000001
FIRST_CHANNEL = 941000000000000001
FIRST_MEMBER = 840000000000000001
DISCORD_EPOCH_MS = 1420070400000
START = datetime(2024, 1, 1, tzinfo=UTC).timestamp()
YEAR_S = 365.0 * 86400

MEMBERS = (
    "ana", "ben", "cleo", "dev", "eli", "fay", "gus", "hana", "ivo", "jun", "kai", "lea",
)  # fmt: skip
CHANNEL_NAMES = ("general", "gaming", "cooking", "music", "tech")
ABOUT_ME = (
    "I live in {place} these days",
    "I work as a {job} now",
    "I love {hobby} more than anything",
    "my favourite thing lately is {hobby}",
    "I switched to {tool} last month",
)
CHATTER = (
    "did anyone see the news about {topic}?",
    "haha that is so true",
    "what do you all think about {topic}",
    "no way, really?",
    "I'd say {topic} is overrated",
    "ok that makes sense",
    "let's talk about {topic} tomorrow",
    "same here honestly",
)
FILL = {
    "place": ("Lisbon", "Austin", "Osaka", "Leeds", "Porto", "Denver"),
    "job": ("nurse", "baker", "QA engineer", "teacher", "welder", "designer"),
    "hobby": ("bouldering", "sourdough", "chess", "gardening", "synths", "running"),
    "tool": ("Linux", "a mechanical keyboard", "Neovim", "a film camera"),
    "topic": ("the new patch", "the derby", "ramen", "vinyl", "rust", "the playoffs"),
}


@dataclass(frozen=True, slots=True)
class History:
    """A generated history: per channel, its messages as (time, author index, text)."""

    channels: tuple[tuple[tuple[float, int, str], ...], ...]

    @property
    def messages(self) -> int:
        """Messages in all channels."""
        return sum(len(c) for c in self.channels)


def _line(rng: random.Random) -> str:
    template = rng.choice(ABOUT_ME if rng.random() < 0.2 else CHATTER)
    return template.format(**{k: rng.choice(v) for k, v in FILL.items()})


def generate(
    messages: int = 20_000,
    *,
    channels: int = 5,
    years: float = 2.0,
    stretch: float = 1.0,
    seed: int = 0,
) -> History:
    """A history of ``messages`` messages over ``years`` years in ``channels`` channels.

    Conversations of 8–32 messages (20–180 s apart, so each fits one buffer) start at random
    times; ``stretch`` multiplies every conversation's offset from the start, so the same
    conversations cover ``stretch`` times the calendar with identical contents.
    """
    rng = random.Random(seed)
    per_channel = [messages // channels + (i < messages % channels) for i in range(channels)]
    found = []
    for count in per_channel:
        sizes: list[int] = []
        while sum(sizes) < count:
            sizes.append(min(rng.randint(8, 32), count - sum(sizes)))
        span = years * YEAR_S - 3 * 3600.0
        starts = sorted(rng.uniform(0, span) for _ in sizes)
        lines: list[tuple[float, int, str]] = []
        for size, offset in zip(sizes, starts, strict=True):
            at = START + offset * stretch
            speakers = rng.sample(range(len(MEMBERS)), rng.randint(2, 4))
            for _ in range(size):
                lines.append((round(at, 3), rng.choice(speakers), _line(rng)))
                at += rng.uniform(20.0, 180.0)
        lines.sort()
        found.append(tuple(lines))
    return History(tuple(found))


def _snowflake(at: float, sequence: int) -> int:
    return ((round(at * 1000) - DISCORD_EPOCH_MS) << 22) | (sequence & 0x3FFFFF)


def write_exports(history: History, folder: Path) -> list[Path]:
    """One DiscordChatExporter JSON file per channel of ``history`` in ``folder``."""
    paths = []
    sequence = 0
    for index, lines in enumerate(history.channels):
        messages: list[dict[str, object]] = []
        for at, author, text in lines:
            sequence += 1
            messages.append(
                {
                    "id": str(_snowflake(at, sequence)),
                    "type": "Default",
                    "timestamp": datetime.fromtimestamp(at, tz=UTC).isoformat(),
                    "timestampEdited": None,
                    "content": text,
                    "author": {
                        "id": str(FIRST_MEMBER + author),
                        "name": MEMBERS[author],
                        "nickname": None,
                        "isBot": False,
                    },
                    "mentions": [],
                }
            )
        export = {
            "guild": {"id": str(GUILD), "name": "Bench"},
            "channel": {
                "id": str(FIRST_CHANNEL + index),
                "type": "GuildTextChat",
                "name": CHANNEL_NAMES[index % len(CHANNEL_NAMES)],
            },
            "messages": messages,
        }
        path = folder / f"channel-{index}.json"
        path.write_text(json.dumps(export), encoding="utf-8")
        paths.append(path)
    return paths


class Interrupted(Exception):
    """Raised from the progress callback to stop an import part-way, as a kill would."""


def _timed(
    paths: Sequence[Path],
    db: Path,
    llm: Callable[[], LLM],
    concurrency: int,
    stop_at: int | None = None,
) -> tuple[ImportReport | None, float]:
    """Import ``paths`` into ``db``; the report (None when stopped) and the wall seconds."""

    def stop(p: ImportProgress) -> None:
        if stop_at is not None and p.seen >= stop_at:
            raise Interrupted

    started = time.perf_counter()
    try:
        report = import_exports(
            list(paths),
            Settings(),
            llm=llm,
            database=db,
            concurrency=concurrency,
            progress=stop if stop_at is not None else None,
        )
    except Interrupted:
        report = None
    return report, time.perf_counter() - started


def _figures(prefix: str, report: ImportReport, wall: float) -> dict[str, object]:
    return {
        f"{prefix}_messages": report.messages,
        f"{prefix}_notes": report.notes_written,
        f"{prefix}_wall_s": round(wall, 2),
        f"{prefix}_messages_per_s": round(report.messages / wall, 1),
        f"{prefix}_llm_calls": report.llm_calls,
        f"{prefix}_calls_in_flight_max": report.calls_in_flight_max,
    }


def _gemini(url: str) -> Callable[[], LLM]:
    config = GeminiConfig(api_key="bench", base_url=url)
    return lambda: RealTimeLLM(lambda: GeminiLLM(config))


def run(
    messages: int,
    latency: float,
    concurrency: int,
    *,
    skip_offline: bool = False,
    skip_fake: bool = False,
) -> dict[str, object]:
    """Every figure of the benchmark; see the module docstring."""
    figures: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="vivy-bench-import-") as tmp:
        folder = Path(tmp)
        (folder / "x1").mkdir()
        (folder / "x10").mkdir()
        paths = write_exports(generate(messages), folder / "x1")
        stretched = write_exports(generate(messages, stretch=10.0), folder / "x10")
        if not skip_offline:
            for prefix, files in (("offline_2y", paths), ("offline_20y", stretched)):
                report, wall = _timed(files, folder / f"{prefix}.db", OfflineLLM, concurrency)
                assert report is not None
                figures |= _figures(prefix, report, wall)
        if skip_fake:
            return figures
        with FakeGemini(schema_route(latency)) as fake:
            llm = _gemini(fake.base_url)
            report, fresh = _timed(paths, folder / "fake.db", llm, concurrency)
            assert report is not None
            served = fake.statistics()
            figures |= _figures("fake_gemini", report, fresh)
            figures["fake_gemini_latency_s"] = latency
            figures["fake_gemini_http_requests"] = served.requests
            figures["fake_gemini_calls_in_flight_mean"] = round(served.busy_s / fresh, 2)
            if latency:
                ideal = report.llm_calls * latency / concurrency
                figures["fake_gemini_ideal_wall_s"] = round(ideal, 2)
                figures["fake_gemini_wall_over_ideal"] = round(fresh / ideal, 3)
            stop_at = int(messages * 0.6)
            _, first = _timed(paths, folder / "killed.db", llm, concurrency, stop_at=stop_at)
            again, rerun = _timed(paths, folder / "killed.db", llm, concurrency)
            assert again is not None
            figures["rerun_killed_at_messages"] = stop_at
            figures["rerun_first_run_wall_s"] = round(first, 2)
            figures["rerun_wall_s"] = round(rerun, 2)
            figures["rerun_llm_calls"] = again.llm_calls
            figures["rerun_cost_vs_fresh"] = round(rerun / fresh, 3)
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    """Print the figures, one ``name: value`` a line."""
    parser = argparse.ArgumentParser(
        prog="vivy bench import",
        description="Time vivy import against messages and calendar span, offline and "
        "through a loopback fake Gemini with a fixed latency.",
    )
    parser.add_argument("--messages", type=int, default=20_000, help="messages to generate")
    parser.add_argument(
        "--latency", type=float, default=1.0, help="fake Gemini answer time, seconds"
    )
    parser.add_argument(
        "--concurrency", type=int, default=4, help="model calls in flight (the import setting)"
    )
    parser.add_argument("--skip-offline", action="store_true", help="no offline runs")
    parser.add_argument("--skip-fake", action="store_true", help="no fake Gemini runs")
    args = parser.parse_args(argv)
    with quiet_logs():
        figures = run(
            args.messages,
            args.latency,
            args.concurrency,
            skip_offline=args.skip_offline,
            skip_fake=args.skip_fake,
        )
    for name, value in figures.items():
        print(f"{name}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
