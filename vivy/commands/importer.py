"""``vivy import PATH...``: replay DiscordChatExporter exports into Vivy's memory.

Every file is validated before anything is written; the history then runs through the live
pipeline on virtual time (see :mod:`vivy.importer`). On a terminal a single progress line is
updated on stderr; otherwise the command is quiet until it prints its report.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping
from typing import TextIO

from vivy.commands.db import add_database_option, database_path, quiet_logs
from vivy.config import Settings
from vivy.errors import VivyError
from vivy.importer import ImportProgress, ImportReport, RealTimeLLM, import_exports
from vivy.llm import OfflineLLM, gemini_config_from_env
from vivy.llm.port import LLM

__all__ = ["format_report", "llm_factory", "progress_line", "register", "run_import"]


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
    return run_import(args.paths, database=str(database_path(args)))


def llm_factory(environ: Mapping[str, str]) -> Callable[[], LLM]:
    """The configured LLM: Gemini on real time when a key is set, else the offline provider."""
    config = gemini_config_from_env(environ)
    if config is None:
        return OfflineLLM
    from vivy.llm.gemini import GeminiLLM

    return lambda: RealTimeLLM(lambda: GeminiLLM(config))


def run_import(
    paths: list[str],
    *,
    database: str,
    environ: Mapping[str, str] | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Import ``paths`` into ``database`` and print the report; returns the exit code."""
    env = os.environ if environ is None else environ
    err = sys.stderr if stderr is None else stderr
    settings = Settings.from_env(env)
    show = progress_line(err) if err.isatty() else None
    try:
        with quiet_logs():
            report = import_exports(
                paths, settings, llm=llm_factory(env), database=database, progress=show
            )
    finally:
        if show is not None:
            err.write("\r\x1b[K")
            err.flush()
    print(format_report(report, database))
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


def progress_line(stream: TextIO) -> Callable[[ImportProgress], None]:
    """A progress callback that rewrites one line of ``stream``."""
    last: list[tuple[str, int, int]] = []

    def show(p: ImportProgress) -> None:
        key = (p.phase, p.seen // 25, p.notes)
        if last and last[0] == key and p.seen != p.total:
            return
        last[:] = [key]
        stream.write(
            f"\r\x1b[K{p.phase}: {p.seen}/{p.total} messages, {p.stored} stored, "
            f"{p.duplicates} already imported, {p.notes} notes"
        )
        stream.flush()

    return show


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) or "none"


def format_report(report: ImportReport, database: str) -> str:
    """The report as printed by ``vivy import``."""
    days = ", ".join(d.isoformat() for d in report.days) or (
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
                [f"  failed:      {', '.join(d.isoformat() for d in report.failed_days)}"]
                if report.failed_days
                else []
            ),
        ]
    )
