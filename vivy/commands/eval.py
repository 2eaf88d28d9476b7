"""``vivy eval``: offline retrieval evaluation, recall@k of vector, keyword and fused search.

Runs :func:`vivy.retrieval.eval.run_eval` on the bundled eval set (or ``--eval-set``) and
prints a table. Embeddings come from the offline provider unless ``--provider auto`` picks
Gemini when a key is set, which is how the Gemini similarity calibration can be checked.
With ``--check`` the exit code is 1 when the fused ranking's recall@5 is below either search
alone.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from vivy.errors import ConfigError

if TYPE_CHECKING:
    from vivy.retrieval.eval import EvalSet

__all__ = ["register", "run"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vivy eval``."""
    parser = commands.add_parser(
        "eval", help="measure retrieval recall@k on the bundled eval set (offline by default)"
    )
    parser.add_argument(
        "--eval-set", default=None, help="eval set JSON file (default: the bundled one)"
    )
    parser.add_argument(
        "--provider",
        choices=("offline", "auto"),
        default="offline",
        help="embeddings: the offline provider, or Gemini when a key is set (auto)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if fused recall@5 is below vector-only or keyword-only recall@5",
    )
    parser.set_defaults(handler=run)


def _eval_set(path: str | None, load: Callable[[str | None], EvalSet]) -> EvalSet:
    """The eval set at ``path``, or a :class:`ConfigError` naming the file and what is wrong."""
    try:
        return load(path)
    except OSError as exc:
        raise ConfigError(f"--eval-set {path}: cannot read it ({exc.strerror or exc})") from exc
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        detail = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc).splitlines()[0]
        raise ConfigError(
            f"--eval-set {path}: not an eval set ({detail}); expected a JSON object with "
            "guild_id, notes and questions, as in vivy/data/eval_set.json"
        ) from exc


def run(args: argparse.Namespace) -> int:
    """Run the eval and print the table; returns the exit code."""
    import anyio

    from vivy.clock import Clock
    from vivy.llm import make_llm
    from vivy.llm.offline import OfflineLLM
    from vivy.llm.port import LLM
    from vivy.retrieval.eval import EvalReport, format_report, load_eval_set, run_eval

    eval_set = _eval_set(args.eval_set, load_eval_set)

    async def main() -> EvalReport:
        llm: LLM
        if args.provider == "auto":
            llm = make_llm(os.environ, clock=Clock.starting_at(time.time()))
        else:
            llm = OfflineLLM()
        try:
            return await run_eval(llm, eval_set)
        finally:
            await llm.aclose()

    report = anyio.run(main)
    print(format_report(report))
    if args.check:
        fused = report.recall["fused"][5]
        alone = max(report.recall["vector"][5], report.recall["keyword"][5])
        if fused < alone:
            print(f"FAIL: fused recall@5 {fused:.3f} is below the best single search {alone:.3f}")
            return 1
    return 0
