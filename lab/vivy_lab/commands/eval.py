"""``vivy eval``: offline retrieval evaluation.

First the long-conversation eval (:func:`vivy_lab.eval.longconv.run_longconv` on the bundled
set, or ``--long-set``): session recall@1/3/5/10 per question kind of the shipped retriever,
of its keyword-only path, of notes only, and of the baselines over the raw conversation text
(BM25 over windows and whole sessions, dense over windows with the same embedding, and their
reciprocal rank fusion), and the quoted-line recall, in one run. Then the note eval
(:func:`vivy_lab.eval.notes.run_eval` on ``--eval-set``): recall@k of vector, keyword and
fused search over note summaries. Embeddings come from the offline provider's local model
unless ``--provider auto`` picks Gemini when a key is set (``--provider gemini`` insists on
it), or ``--provider openai`` the OpenAI-compatible endpoint of ``VIVY_OPENAI_BASE_URL``
(``VIVY_OPENAI_EMBEDDING_MODEL``). With ``--check`` the exit code is 1 when the shipped
retriever's recall at 1, 5 or 10, overall or in a question kind, is below a baseline's, its
recall@5 is not above its keyword-only path's, or the fused ranking's recall@5 is below
either search alone; with ``--goals`` too, while paraphrase or quoted-line recall@5 is below
its target (0.80).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import TypeVar

from vivy.errors import ConfigError

__all__ = ["register", "run"]

T = TypeVar("T")


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vivy eval``."""
    parser = commands.add_parser(
        "eval",
        help="measure retrieval recall@k on the bundled eval set (offline by default)",
        description="Measure the memory search on the bundled eval sets: first session "
        "recall@1/3/5/10 per question kind on the long-conversation set, against its keyword-only "
        "path, notes only, BM25 over the raw conversations, dense search with the same embedding "
        "and their fusion, with the quoted-line recall; then recall@k of vector, keyword and fused "
        "search on the small note set. The offline provider's local model unless --provider.",
    )
    parser.add_argument(
        "--eval-set", default=None, help="eval set JSON file (default: the bundled one)"
    )
    parser.add_argument(
        "--long-set",
        default=None,
        help="long-conversation eval set JSON file (default: the bundled one)",
    )
    parser.add_argument(
        "--set",
        dest="eval_name",
        choices=("bundled", "longconv-dev"),
        default="bundled",
        help="bundled: the generated eval sets shipped with the lab (regression checks);"
        " longconv-dev: the real conversations of --dev-data, imported through vivy import"
        " (the embedded default) and stored with their own summaries (a stand-in for a good"
        " model), with cross-validated figures",
    )
    parser.add_argument(
        "--dev-data",
        default=None,
        help="the real dev set's conversations.json (default:"
        " ../shared/data/longconv-dev/conversations.json)",
    )
    parser.add_argument(
        "--provider",
        choices=("offline", "auto", "gemini", "openai"),
        default="offline",
        help="embeddings: the offline provider's local model, Gemini when a key is set (auto),"
        " Gemini (its key required), or the OpenAI-compatible endpoint VIVY_OPENAI_BASE_URL"
        " names (openai)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if the retriever's recall@1/5/10 (overall or in a question kind) is below a"
        " baseline's (BM25 raw, BM25 sessions, dense, RRF), its recall@5 not above its"
        " keyword-only path's, or fused recall@5 below vector-only or keyword-only recall@5"
        " on the note eval",
    )
    parser.add_argument(
        "--goals",
        action="store_true",
        help="with --check, also exit 1 while paraphrase or quoted-line recall@5 is below 0.80",
    )
    parser.set_defaults(handler=run)


_NOTES_SHAPE = "guild_id, notes and questions, as in lab/vivy_lab/data/eval_set.json"
_LONG_SHAPE = "guilds of sessions and questions, as in lab/vivy_lab/data/longconv_eval.json"


def _eval_set(option: str, path: str | None, load: Callable[[str | None], T], shape: str) -> T:
    """The eval set at ``path``, or a :class:`ConfigError` naming the file and what is wrong."""
    try:
        return load(path)
    except OSError as exc:
        raise ConfigError(f"{option} {path}: cannot read it ({exc.strerror or exc})") from exc
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        detail = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc).splitlines()[0]
        raise ConfigError(
            f"{option} {path}: not an eval set ({detail}); expected a JSON object with {shape}"
        ) from exc


def run(args: argparse.Namespace) -> int:
    """Run the eval and print the table; returns the exit code."""
    import anyio

    from vivy.clock import Clock
    from vivy.config import Settings
    from vivy.llm import check_llm, make_llm
    from vivy.llm.offline import OfflineLLM
    from vivy.llm.port import LLM
    from vivy_lab.eval.longconv import (
        LongReport,
        below_baseline,
        format_long_report,
        load_longconv,
        run_longconv,
        short_of_goals,
    )
    from vivy_lab.eval.notes import EvalReport, format_report, load_eval_set, run_eval

    if args.eval_name == "longconv-dev":
        return run_dev_set(args.dev_data)
    eval_set = _eval_set("--eval-set", args.eval_set, load_eval_set, _NOTES_SHAPE)
    long_set = _eval_set("--long-set", args.long_set, load_longconv, _LONG_SHAPE)

    async def main() -> tuple[LongReport, EvalReport]:
        llm: LLM = OfflineLLM()
        if args.provider in ("auto", "gemini"):
            llm = make_llm(os.environ, clock=Clock.wall())
            if args.provider == "gemini" and llm.quality != "gemini":
                await llm.aclose()
                raise ConfigError(
                    "--provider gemini needs a Gemini key: set GEMINI_API_KEY (or"
                    " MEMORY_GEMINI_TOKEN), or leave --provider out for the local model"
                )
        elif args.provider == "openai":
            settings = Settings.from_env({**os.environ, "VIVY_EMBEDDING_PROVIDER": "openai"})
            await check_llm(settings)
            llm = make_llm(settings, clock=Clock.wall())
        try:
            return await run_longconv(llm, long_set), await run_eval(llm, eval_set)
        finally:
            await llm.aclose()

    long_report, report = anyio.run(main)
    print(format_long_report(long_report))
    print()
    print(format_report(report))
    if args.check:
        shortfalls = below_baseline(long_report) + short_of_goals(long_report, targets=args.goals)
        for shortfall in shortfalls:
            print(f"FAIL: {shortfall}")
        if shortfalls:
            return 1
        fused = report.recall["fused"][5]
        alone = max(report.recall["vector"][5], report.recall["keyword"][5])
        if fused < alone:
            print(f"FAIL: fused recall@5 {fused:.3f} is below the best single search {alone:.3f}")
            return 1
    return 0


def run_dev_set(path: str | None) -> int:
    """``vivy eval --set longconv-dev``: both runs of the real dev set, and their figures."""
    import tempfile
    from pathlib import Path

    import anyio

    from vivy.llm.offline import OfflineLLM
    from vivy_lab.eval.longconv_dev import DEFAULT_DEV_PATH, load_dev
    from vivy_lab.eval.longconv_dev_run import (
        dev_figures,
        format_dev_report,
        generated_rows,
        run_default,
        run_stand_in,
    )

    where = Path(path) if path is not None else DEFAULT_DEV_PATH
    if not where.is_file():
        raise ConfigError(
            f"--dev-data {where}: no such file; the real dev set lies in"
            " ../shared/data/longconv-dev/ beside the repository, or pass its path"
        )
    try:
        dev = load_dev(where)
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise ConfigError(f"--dev-data {where}: not the dev set's conversations ({exc})") from exc
    llm = OfflineLLM()
    with tempfile.TemporaryDirectory(prefix="vivy-dev-eval-") as folder:
        default = run_default(dev, llm, Path(folder))
    stand_in = anyio.run(run_stand_in, dev, llm)
    generated = anyio.run(generated_rows, llm)
    figures = [
        dev_figures(run, llm.embedding_model, extra=generated) for run in (default, stand_in)
    ]
    print(f"dev set: {dev.dropped_evidence} evidence ids name no message and were dropped")
    print(format_dev_report(figures))
    return 0
