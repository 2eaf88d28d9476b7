"""``vivy import PATH...``: replay DiscordChatExporter exports into Vivy's memory.

Every file is validated before anything is written; the history then runs through the live
pipeline on virtual time (see :mod:`vivy.importer`). On a terminal a progress bar (messages,
notes, model calls, ETA) is drawn on stderr; otherwise one progress line is written there
every few seconds. The ETA is shown once there is enough work done to extrapolate from, and
never when nothing is left to estimate. Warnings the pipeline logs meanwhile (a model call
that failed and will be retried) are counted and summarised in one line at the end, unless
``VIVY_LOG_LEVEL`` asks for the log itself. Ctrl-C ends the import with a line saying what
was kept and that running the same command again continues it.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager
from datetime import date, timedelta
from typing import Any, TextIO

import anyio
import structlog
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn

from vivy.commands.db import add_database_option, database_target, quiet_logs, require_writable
from vivy.config import Settings, shown_database
from vivy.errors import VivyError
from vivy.importer import ImportProgress, ImportReport, RealTimeLLM, import_exports
from vivy.llm import OfflineLLM, build_llm, check_llm
from vivy.llm.port import LLM
from vivy.storage.engines import Target

__all__ = [
    "ETA_AFTER",
    "LOG_EVERY_S",
    "REDRAW_S",
    "Eta",
    "ProgressBar",
    "ProgressLog",
    "describe",
    "format_report",
    "llm_factory",
    "register",
    "run_import",
    "summarised_warnings",
    "summary",
]

#: Real seconds between progress lines when stderr is not a terminal.
LOG_EVERY_S = 5.0

#: Shortest real time between two redraws of the progress bar.
REDRAW_S = 0.1


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vivy import``."""
    parser = commands.add_parser(
        "import",
        help="replay DiscordChatExporter JSON exports into memory",
        description="Validate DiscordChatExporter JSON exports, then replay their messages "
        "in timestamp order through the live pipeline on virtual time, so they become notes "
        "and profile facts as if Vivy had been there. Ids already imported are skipped, so an "
        "interrupted import is finished by running it again.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="export file (.json)")
    add_database_option(parser)
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    database = database_target(args)
    if not isinstance(database, str):
        require_writable(database)
    return run_import(args.paths, database=database)


def llm_factory(environ: Mapping[str, str], *, backend: str = "asyncio") -> Callable[[], LLM]:
    """The configured LLM: the offline provider as it is, any network provider on real time
    (on a private ``backend`` loop, see :class:`RealTimeLLM`)."""
    settings = Settings.from_env(environ)
    if settings.llm_provider == settings.embedding_provider == "offline":
        return OfflineLLM
    return lambda: RealTimeLLM(lambda: build_llm(settings), backend=backend)


def run_import(
    paths: list[str],
    *,
    database: Target | None,
    environ: Mapping[str, str] | None = None,
    stderr: TextIO | None = None,
    ticker: Callable[[], float] = time.monotonic,
) -> int:
    """Import ``paths`` into ``database`` (None: the one ``VIVY_DB`` names) and print the
    report; returns the exit code.

    Progress goes to ``stderr``: a bar on a terminal, else one line every
    :data:`LOG_EVERY_S` seconds of real time (``ticker``).
    """
    env = os.environ if environ is None else environ
    err = sys.stderr if stderr is None else stderr
    settings = Settings.from_env(env)
    anyio.run(check_llm, settings)
    display = ProgressBar(err, ticker) if err.isatty() else ProgressLog(err, ticker)
    last: list[ImportProgress] = []

    def progress(p: ImportProgress) -> None:
        last[:] = [p]
        display(p)

    warnings: Counter[str] = Counter()
    try:
        with quiet_logs(), summarised_warnings(warnings, keep=settings.log_level is not None):
            report = import_exports(
                paths, settings, llm=llm_factory(env), database=database, progress=progress
            )
    except KeyboardInterrupt:
        display.close()
        kept = (
            f"{last[0].stored} messages stored and {last[0].notes} notes written"
            if last
            else ("every message stored so far")
        )
        err.write(
            f"vivy import: interrupted; {kept} are kept: run the same command again to "
            "continue where it stopped\n"
        )
        raise
    finally:
        display.close()
        if warnings:
            err.write(f"vivy import: {summary(warnings)}\n")
    shown = shown_database(settings if database is None else settings.with_target(database))
    print(format_report(report, shown))
    if (
        settings.allowed_guilds
        and report.excluded.get("excluded_guild")
        and not (report.stored or report.duplicates)
    ):
        err.write(
            "vivy import: VIVY_ALLOWED_GUILDS excludes every guild of these exports, so "
            "nothing was remembered; add their guild ids to it, or unset it\n"
        )
    if report.failed_days:
        raise VivyError(
            "the nightly job failed for "
            + ", ".join(d.isoformat() for d in report.failed_days)
            + " (see the log); run the same import again, or `vivy job run --date DAY`"
        )
    if not report.complete:
        raise VivyError(
            f"{report.pending_buffers} conversation buffers and {report.pending_updates} "
            "profile updates are still pending after repeated LLM failures; run the same "
            "import again to finish them"
        )
    return 0


#: Distinct warnings a summary names before it says how many more kinds there were.
SUMMARY_KINDS = 3


@contextmanager
def summarised_warnings(counts: Counter[str], *, keep: bool = False) -> Iterator[None]:
    """Count the warnings and errors logged meanwhile by their message, in ``counts``, instead
    of printing each between the progress lines (``keep``: print them as configured)."""
    if keep:
        yield
        return
    saved = structlog.get_config()

    def count(_: Any, __: str, event: MutableMapping[str, Any]) -> Any:
        counts[str(event.get("event", "warning"))] += 1
        raise structlog.DropEvent

    structlog.configure(
        processors=[count],
        wrapper_class=structlog.make_filtering_bound_logger(30),  # warning and above
    )
    try:
        yield
    finally:
        structlog.configure(**saved)


def summary(counts: Counter[str]) -> str:
    """One line for the warnings counted during an import."""
    total = sum(counts.values())
    named = [f"{n} × {event}" for event, n in counts.most_common(SUMMARY_KINDS)]
    if len(counts) > SUMMARY_KINDS:
        named.append(f"{len(counts) - SUMMARY_KINDS} more kinds")
    return (
        f"{total} warning{'' if total == 1 else 's'} during the import ({'; '.join(named)}); "
        "set VIVY_LOG_LEVEL=warning to see each one"
    )


#: Share of the work done before the ETA is shown: earlier it extrapolates from too little.
ETA_AFTER = 0.05


#: Model calls a queued work item still needs on average: a note takes a generation and an
#: embedding, a profile update one generation.
CALLS_PER_QUEUED_ITEM = 1.5


class Eta:
    """Estimates the real seconds an import has left from its progress records.

    The work is model calls: those done, those under way, those the queued notes and profile
    updates need, and, for the messages not replayed yet, as many per message as so far.
    """

    def __init__(self, ticker: Callable[[], float]) -> None:
        self._ticker = ticker
        self._started = ticker()

    def fraction(self, p: ImportProgress) -> float:
        """The share of the work done, from 0 to 1."""
        if p.phase == "done":
            return 1.0
        ahead = p.in_flight + p.queued * CALLS_PER_QUEUED_ITEM
        if p.seen < p.total:
            per_message = (p.calls + ahead) / p.seen if p.seen else 0.0
            ahead += (p.total - p.seen) * per_message
        work = p.calls + ahead
        if work == 0:
            return p.seen / p.total if p.total else 1.0
        return p.calls / work

    def seconds_left(self, p: ImportProgress) -> float | None:
        """Real seconds left, or ``None`` before :data:`ETA_AFTER` of the work is done (too
        little to extrapolate from) and once it is all done."""
        done = self.fraction(p)
        if done < ETA_AFTER or done >= 1.0:
            return None
        elapsed = self._ticker() - self._started
        return elapsed * (1.0 - done) / done


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def _eta(seconds: float | None, separator: str) -> str:
    """``, ETA 1m05s`` (after ``separator``), or nothing when there is no estimate."""
    return "" if seconds is None else f"{separator}ETA {_duration(seconds)}"


def describe(p: ImportProgress, eta: float | None) -> str:
    """One line for a progress record: messages, notes, calls and the ETA if there is one."""
    return (
        f"{p.phase}: {p.seen}/{p.total} messages, {p.stored} stored, "
        f"{p.duplicates} already imported, {p.notes} notes, {p.calls} calls "
        f"({p.in_flight} in flight){_eta(eta, ', ')}"
    )


class ProgressBar:
    """A rich progress bar on a terminal: work done, messages, notes, calls, ETA.

    Redraws at most every :data:`REDRAW_S` real seconds (and on a phase change), so the
    replay of tens of thousands of messages does not spend its time drawing.
    """

    def __init__(self, stream: TextIO, ticker: Callable[[], float]) -> None:
        self._ticker = ticker
        self._eta = Eta(ticker)
        self._drawn_at = -math.inf
        self._phase = ""
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[line]}"),
            console=Console(file=stream, force_terminal=True),
            auto_refresh=False,
            transient=True,
        )
        self._task = self._progress.add_task("import", total=1000, line="")
        self._progress.start()

    def __call__(self, p: ImportProgress) -> None:
        """Show ``p`` (throttled)."""
        now = self._ticker()
        if p.phase == self._phase and now - self._drawn_at < REDRAW_S:
            return
        self._phase, self._drawn_at = p.phase, now
        eta = self._eta.seconds_left(p)
        self._progress.update(
            self._task,
            completed=round(1000 * self._eta.fraction(p)),
            description=p.phase,
            line=(
                f"{p.seen}/{p.total} messages · {p.notes} notes · {p.calls} calls "
                f"({p.in_flight} in flight){_eta(eta, ' · ')}"
            ),
        )
        self._progress.refresh()

    def close(self) -> None:
        """Remove the bar."""
        self._progress.stop()


class ProgressLog:
    """Progress off a terminal: one line every :data:`LOG_EVERY_S` real seconds, so a
    redirected import is never silent for long."""

    def __init__(self, stream: TextIO, ticker: Callable[[], float]) -> None:
        self._stream = stream
        self._ticker = ticker
        self._eta = Eta(ticker)
        self._logged_at = ticker()

    def __call__(self, p: ImportProgress) -> None:
        """Log ``p`` if :data:`LOG_EVERY_S` passed since the last line."""
        now = self._ticker()
        if now - self._logged_at >= LOG_EVERY_S:
            self._logged_at = now
            self._stream.write(f"vivy import: {describe(p, self._eta.seconds_left(p))}\n")
            self._stream.flush()

    def close(self) -> None:
        """Nothing more to log (the report follows on stdout)."""


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) or "none"


#: Longest list of days (or ranges of days) a report shows before it shows a count instead.
MAX_DAY_SPANS = 4


def describe_days(days: Sequence[date]) -> str:
    """``days`` in a few words: each run of three or more consecutive days as a range, the
    others one by one; more than :data:`MAX_DAY_SPANS` of these become a count."""
    ordered = sorted(set(days))
    runs: list[list[date]] = []
    for day in ordered:
        if runs and day - runs[-1][-1] == timedelta(days=1):
            runs[-1].append(day)
        else:
            runs.append([day])
    spans: list[str] = []
    for run in runs:
        if len(run) >= 3:
            spans.append(f"{run[0].isoformat()} to {run[-1].isoformat()} ({len(run)} days)")
        else:
            spans += [day.isoformat() for day in run]
    if len(spans) > MAX_DAY_SPANS:
        return f"{len(ordered)} days from {ordered[0].isoformat()} to {ordered[-1].isoformat()}"
    return ", ".join(spans)


def format_report(report: ImportReport, database: str) -> str:
    """The report as printed by ``vivy import``."""
    days = describe_days(report.days) or (
        "none (already done)"
        if report.complete
        else "none ran to the end"
        if report.failed_days
        else "waits for the pending work"
    )
    excluded = _counts({k.removeprefix("excluded_"): v for k, v in report.excluded.items()})
    seen = f"{report.messages} seen"
    if report.repeated:
        seen += f" ({report.repeated} more repeated across files)"
    return "\n".join(
        [
            f"imported {_plural(report.files, 'file')} into {database} ({report.llm} LLM)",
            f"  messages:    {seen}, {report.stored} stored, {report.duplicates} imported before",
            f"  skipped:     by type: {_counts(report.skipped_by_type)}; "
            f"by the capture gate: {excluded}",
            f"  notes:       {_plural(report.notes_written, 'conversation note')}, "
            f"{_plural(report.clusters_written, 'topic cluster')}",
            f"  profiles:    {_plural(report.facts_added, 'fact')} added",
            f"  nightly job: {days}",
            *(
                [f"  failed:      {describe_days(report.failed_days)}"]
                if report.failed_days
                else []
            ),
        ]
    )
