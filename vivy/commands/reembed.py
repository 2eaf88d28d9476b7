"""``vivy reembed``: re-embed every note with the configured embedding model.

Vivy refuses to start when its notes were embedded by another model than the configured one
(:func:`vivy.app.check_embedding_model`); this command is the way forward. Each note's
contextual text is recomputed as the NoteWriter (or, for topic clusters, the Scheduler) builds
it, embedded in batches as a document, and staged in a work table; once every note has a new
vector, one transaction swaps them into ``vec_notes`` (recreated when the dimension changed)
and records the model in ``meta``. Until then the old vectors stay in use, and an interrupted
run resumes with the vectors it had staged. The swap clears the evidence windows' embeddings
(they belong to the old model); they are embedded again right after, and a run interrupted
then finishes them when started again. With the model the notes were embedded with already,
it embeds only the windows left without a vector (after an edit) and says so, unless
``--force`` asks for everything again (after an upgrade that changes how texts are embedded).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import anyio

from vivy.actors.note_writer import contextual_text
from vivy.clock import Clock
from vivy.commands.db import add_database_option, database_target, existing, quiet_logs
from vivy.errors import LLMInvalidOutput
from vivy.llm import make_llm
from vivy.llm.port import LLM, EmbeddingTask
from vivy.memory.evidence import pooled_windows, window_lines
from vivy.memory.notes import NoteText, NoteType
from vivy.storage.engines import Target, open_store
from vivy.storage.port import Store

__all__ = [
    "DEFAULT_BATCH",
    "ReembedReport",
    "embedding_text",
    "format_reembed",
    "reembed_notes",
    "register",
    "run_reembed",
]

#: Notes embedded per call.
DEFAULT_BATCH = 100


@dataclass(frozen=True, slots=True)
class ReembedReport:
    """What a re-embed did."""

    notes: int
    windows: int
    resumed: int
    model: str
    dimension: int
    previous: str | None
    #: The notes were embedded with this model already and were left as they were.
    unchanged: bool = False


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vivy reembed``."""
    parser = commands.add_parser(
        "reembed",
        help="re-embed every note with the configured embedding model",
        description="Recompute every note's embedding with the configured embedding model "
        "and record the model, so Vivy starts after an embedding model change. The old vectors "
        "stay in use until all new ones are ready; an interrupted run resumes.",
    )
    parser.add_argument(
        "--batch-size",
        type=_batch_size,
        default=DEFAULT_BATCH,
        metavar="N",
        help=f"notes per embedding call (1-1000, default {DEFAULT_BATCH})",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="re-embed every note and window even when the configured model is the one they "
        "were embedded with (after an upgrade that changes how texts are embedded)",
    )
    add_database_option(parser)
    parser.set_defaults(
        handler=lambda args: run_reembed(database_target(args), args.batch_size, force=args.force)
    )


def _batch_size(text: str) -> int:
    """An argparse type: a batch size from 1 to 1000."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"not a batch size from 1 to 1000: {text!r}")
    return value


def embedding_text(note: NoteText) -> str:
    """The text a note is embedded from, as it was built when the note was written."""
    if note.note_type == NoteType.TOPIC_CLUSTER:
        return f"Topic cluster of {note.note_date}\n\n{note.title}\n{note.summary}"
    return contextual_text(
        note.channel_name,
        note.note_date,
        list(note.participants),
        list(note.topics),
        note.title,
        note.summary,
    )


async def _reembed_windows(store: Store, llm: LLM, batch_size: int) -> int:
    """Embed every evidence window left without an embedding (all of them after the swap),
    pooled from its lines as the NoteWriter does; returns how many."""
    done = 0
    while batch := await store.evidence.windows_to_embed(batch_size):
        texts = [w.text for w in batch]
        lines = window_lines(texts)
        vectors = await llm.embed(lines, EmbeddingTask.DOCUMENT)
        if len(vectors) != len(lines):
            raise LLMInvalidOutput(
                f"the embedding model returned {len(vectors)} vectors for {len(lines)} texts"
            )
        pooled = pooled_windows(texts, lines, vectors, [w.note_vector for w in batch])
        await store.evidence.set_window_embeddings(
            list(zip((w.id for w in batch), pooled, strict=True))
        )
        done += len(batch)
    return done


async def reembed_notes(
    store: Store,
    llm: LLM,
    *,
    batch_size: int = DEFAULT_BATCH,
    progress: Callable[[int], None] | None = None,
    force: bool = False,
) -> ReembedReport:
    """Re-embed every note with ``llm`` and swap the vectors in; see the module docstring.
    Notes already embedded with ``llm``'s model are left as they are unless ``force``."""
    previous = await store.meta.get_meta("embedding_model")
    previous_dim = await store.meta.get_meta("embedding_dimension")
    if not force and previous == llm.embedding_model and previous_dim == str(llm.dimension):
        windows = await _reembed_windows(store, llm, batch_size)
        return ReembedReport(0, windows, 0, llm.embedding_model, llm.dimension, None, True)
    key = f"{llm.embedding_model} ({llm.dimension} dimensions)"
    resumed = done = await store.reembed.begin_staging(key)
    while True:
        batch = await store.reembed.notes_to_embed(batch_size)
        if not batch:
            written = await store.reembed.swap_note_vectors(llm.embedding_model, llm.dimension)
            if written is not None:
                break
            continue  # notes were added meanwhile; embed them too
        vectors = await llm.embed([embedding_text(n) for n in batch], EmbeddingTask.DOCUMENT)
        if len(vectors) != len(batch) or any(len(v) != llm.dimension for v in vectors):
            raise LLMInvalidOutput(
                f"the embedding model returned {len(vectors)} vectors for {len(batch)} texts, "
                f"or vectors that are not {llm.dimension} long"
            )
        staged = [(note.id, vector) for note, vector in zip(batch, vectors, strict=True)]
        await store.reembed.stage_vectors(staged)
        done += len(batch)
        if progress is not None:
            progress(done)
    windows = await _reembed_windows(store, llm, batch_size)
    return ReembedReport(
        notes=written,
        windows=windows,
        resumed=resumed,
        model=llm.embedding_model,
        dimension=llm.dimension,
        previous=None if previous is None else f"{previous} ({previous_dim} dimensions)",
    )


def run_reembed(
    database: Target,
    batch_size: int = DEFAULT_BATCH,
    *,
    force: bool = False,
    environ: Mapping[str, str] | None = None,
) -> int:
    """Re-embed the notes of ``database`` (all of them again when ``force``); prints the
    result, returns the exit code."""
    existing(database)
    env = os.environ if environ is None else environ
    show = sys.stderr.isatty()

    def progress(done: int) -> None:
        sys.stderr.write(f"\r\x1b[Kre-embedding: {done} notes")
        sys.stderr.flush()

    async def main() -> ReembedReport:
        # The command line is the entry point, so it is where wall time is read.
        clock = Clock.wall()
        llm = make_llm(env, clock=clock)
        store = open_store(database, inline=True)
        try:
            return await reembed_notes(
                store,
                llm,
                batch_size=batch_size,
                progress=progress if show else None,
                force=force,
            )
        finally:
            store.close()
            await llm.aclose()

    with quiet_logs():
        try:
            report = anyio.run(main)
        finally:
            if show:
                sys.stderr.write("\r\x1b[K")
    print(format_reembed(report))
    return 0


def format_reembed(report: ReembedReport) -> str:
    """What ``vivy reembed`` prints."""
    if report.unchanged:
        return (
            f"the notes are embedded with {report.model} ({report.dimension} dimensions)"
            f" already; embedded {report.windows} evidence windows that had none"
            " (--force re-embeds everything)"
        )
    line = (
        f"re-embedded {report.notes} notes and {report.windows} evidence windows with"
        f" {report.model} ({report.dimension} dimensions)"
    )
    if report.previous:
        line += f"; before: {report.previous}"
    if report.resumed:
        line += f"; resumed with {report.resumed} vectors from an interrupted run"
    return line
