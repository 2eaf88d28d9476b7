"""``vivy eval --set longconv-dev``: Vivy's memory on the real dev conversations, two ways.

* ``default``: the embedded default as an operator meets it. The conversations are written
  as DiscordChatExporter exports (:func:`~vivy_lab.eval.longconv_dev.write_exports`) and
  imported by ``vivy import``'s own code into a fresh SQLite file with the offline provider
  (extractive notes, the shipped local embedding model); the import's rate is reported.
* ``stand-in``: what a good model would give. Each session is stored through the note
  writer's path with the data's own session summary as its note, embedded by the shipped
  local model (:func:`~vivy_lab.eval.longconv.store_sessions`).

In each, every answerable question is asked in its guild through the product's own ranked
search (:func:`~vivy.retrieval.ranked.ranked_notes`, as ``vivy search`` and replies do), and
so are questions the guild's memory cannot answer (another conversation's questions, random
words; :func:`~vivy_lab.eval.longconv_dev.strangers`). Reported beside plain BM25 over the
raw sessions in the same run: session recall@1/3/5/10 overall and per category, the shipped
weights' and the *cross-validated* ones' (each conversation ranked by weights learned on the
other four, :func:`vivy_lab.eval.learning.cross_validate`: the figure that counts, since the
shipped weights were learned on these conversations), quoted-line recall, and the gate: how
often an answerable question keeps its answer in the reply's notes, and how often an
unanswerable one gets no note at all. The ``ceiling`` row is the best any ranking can reach
(:func:`~vivy_lab.eval.longconv.ideal_sessions`): a multi-hop question's answer spans
sessions, so its recall at 1 stays below 1.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vivy.config import Settings
from vivy.importer.replay import import_exports
from vivy.llm.port import LLM, EmbeddingTask
from vivy.retrieval.ranking import calibration_for
from vivy.retrieval.settings import DEFAULT_SETTINGS, RetrievalSettings
from vivy.storage.sqlite.stores import open_sqlite_store
from vivy_lab.eval.baselines import bm25_index, bm25_sessions
from vivy_lab.eval.learning import LEARNED, QuestionRows, cross_validate, question_rows
from vivy_lab.eval.longconv import (
    Searched,
    baseline_rankings,
    ideal_sessions,
    load_longconv,
    memory_store,
    quoted_recall,
    ranked_sessions,
    score_methods,
    search_questions,
    search_stored,
    session_recall,
    store_sessions,
)
from vivy_lab.eval.longconv_dev import (
    CATEGORY_KINDS,
    DevRun,
    DevSet,
    session_keys_of_notes,
    strangers,
    write_exports,
)
from vivy_lab.eval.longconv_report import BASELINES, KINDS, KS, mean

__all__ = [
    "DevFigures",
    "dev_figures",
    "format_dev_report",
    "generated_floors",
    "generated_rows",
    "run_default",
    "run_stand_in",
]


def _bm25(dev: DevSet) -> dict[str, tuple[tuple[str, ...], ...]]:
    """Each answerable question's sessions by plain BM25 (best raw window; whole session)."""
    found: dict[str, list[tuple[str, ...]]] = {"bm25_raw": [], "bm25_session": []}
    for guild in dev.data.guilds:
        windows, whole = bm25_index(guild), bm25_index(guild, whole=True)
        for question in guild.questions:
            found["bm25_raw"].append(tuple(bm25_sessions(windows, question.question)))
            found["bm25_session"].append(tuple(bm25_sessions(whole, question.question)))
    return {method: tuple(rows) for method, rows in found.items()}


def run_default(
    dev: DevSet, llm: LLM, folder: Path, settings: RetrievalSettings = DEFAULT_SETTINGS
) -> DevRun:
    """Import the dev set with ``vivy import``'s code into ``folder``, then ask it."""
    paths = write_exports(dev, folder / "exports")
    database = folder / "default.db"
    started = time.perf_counter()
    import_exports(paths, Settings(), llm=llm, database=database)
    took = time.perf_counter() - started
    with sqlite3.connect(database) as conn:
        pairs = [
            (int(n), int(m)) for n, m in conn.execute("SELECT note_id, message_id FROM note_lines")
        ]
    keys = session_keys_of_notes(pairs, dev.data)

    async def ask() -> tuple[list[Searched], list[Searched]]:
        store = open_sqlite_store(database, inline=True)
        try:
            return (
                await search_stored(store, dev.data, keys, llm, settings),
                await search_stored(store, strangers(dev), keys, llm, settings),
            )
        finally:
            store.close()

    import anyio

    searched, unanswerable = anyio.run(ask)
    messages = sum(len(s.messages) for g in dev.data.guilds for s in g.sessions)
    return DevRun("default", tuple(searched), tuple(unanswerable), _bm25(dev), messages, took)


async def run_stand_in(
    dev: DevSet, llm: LLM, settings: RetrievalSettings = DEFAULT_SETTINGS
) -> DevRun:
    """Store each session with its summary as the note, then ask it."""
    store = memory_store()
    try:
        keys = await store_sessions(store, dev.data, llm, evidence=True)
        searched = await search_stored(store, dev.data, keys, llm, settings)
        unanswerable = await search_stored(store, strangers(dev), keys, llm, settings)
    finally:
        store.close()
    messages = sum(len(s.messages) for g in dev.data.guilds for s in g.sessions)
    return DevRun("stand-in", tuple(searched), tuple(unanswerable), _bm25(dev), messages, None)


#: Where coordinate ascent starts, in every fold and for the shipped weights: every learned
#: feature alike (then the meaning boost, the diversity bonus and the evidence's factor for
#: a question asking when), so no fold starts from what was learned on its own conversation.
NEUTRAL_START: tuple[float, ...] = (*(1.0 for _ in LEARNED), 2.25, 1.0, 1.0)


@dataclass(frozen=True, slots=True)
class DevFigures:
    """One run's figures: session recall by method and k, overall and per category; the
    shipped retriever's quoted-line recall at 5; the gate's rates; the import's rate."""

    name: str
    questions: int
    recall: Mapping[str, Mapping[int, float]]
    by_kind: Mapping[str, Mapping[str, Mapping[int, float]]]
    quoted_at_5: float
    answer_kept: float
    stranger_empty: float
    random_empty: float
    messages_per_s: float | None
    fold_weights: Mapping[str, tuple[float, ...]]


def _table(
    searched: Sequence[Searched], ranked: Sequence[Sequence[str]]
) -> tuple[dict[int, float], dict[str, dict[int, float]]]:
    """Mean session recall per k, overall and per category."""
    overall = {
        k: mean(
            [session_recall(r, one.answers, k) for one, r in zip(searched, ranked, strict=True)]
        )
        for k in KS
    }
    by_kind = {
        kind: {
            k: mean(
                [
                    session_recall(r, one.answers, k)
                    for one, r in zip(searched, ranked, strict=True)
                    if one.question.kind == kind
                ]
            )
            for k in KS
        }
        for kind in CATEGORY_KINDS.values()
    }
    return overall, by_kind


def dev_figures(
    run: DevRun,
    embedding_model: str,
    settings: RetrievalSettings = DEFAULT_SETTINGS,
    *,
    extra: Sequence[QuestionRows] = (),
) -> DevFigures:
    """The figures of ``run`` (see :class:`DevFigures`), the cross-validated ones included
    (``extra``: questions always in the training, never held out, as
    ``scripts/learn_fusion_weights.py`` learns with the generated set). Recall is that of the
    search listing, as ``vivy search`` ranks; the gate's rates are those of the reply's
    memory (its first notes, through the reply's gate)."""
    default = calibration_for(embedding_model)

    def replied(one: Searched) -> list[str]:
        return ranked_sessions(
            one,
            calibration=one.scale or default,
            weights=settings.weights,
            gate=settings.gate,
            limit=settings.conversation_notes,
        )

    rows = question_rows(run.searched, lambda one: one.scale or default)
    cross, folds = cross_validate(rows, NEUTRAL_START, extra=extra)
    rankings: dict[str, Sequence[Sequence[str]]] = {
        "shipped": [one.shipped.sessions for one in run.searched],
        "cross-validated": cross,
        "keyword_only": [one.keyword_only.sessions for one in run.searched],
        **run.bm25,
        "ceiling": [ideal_sessions(one.answers) for one in run.searched],
    }
    recall: dict[str, dict[int, float]] = {}
    by_kind: dict[str, dict[str, dict[int, float]]] = {}
    for method, ranked in rankings.items():
        recall[method], by_kind[method] = _table(run.searched, ranked)
    kept = [bool(set(replied(one)) & set(one.answers.values())) for one in run.searched]
    strange = [one for one in run.strangers if one.question.kind == "stranger"]
    random = [one for one in run.strangers if one.question.kind == "random"]
    return DevFigures(
        name=run.name,
        questions=len(run.searched),
        recall=recall,
        by_kind=by_kind,
        quoted_at_5=mean([quoted_recall(one.shipped, one.answers, 5) for one in run.searched]),
        answer_kept=mean([1.0 if k else 0.0 for k in kept]),
        stranger_empty=mean([0.0 if replied(one) else 1.0 for one in strange]),
        random_empty=mean([0.0 if replied(one) else 1.0 for one in random]),
        messages_per_s=None if not run.import_s else run.messages / run.import_s,
        fold_weights={group: tuple(float(v) for v in np.round(w, 4)) for group, w in folds.items()},
    )


def format_dev_report(figures: Sequence[DevFigures]) -> str:
    """The figures as text: a recall table per run, then the gate and the import's rate."""
    lines: list[str] = []
    for one in figures:
        lines.append(f"{one.name}: {one.questions} questions; session recall @1 @3 @5 @10")
        for method, per in one.recall.items():
            cells = " ".join(f"{per[k]:.3f}" for k in KS)
            kinds = "  ".join(
                f"{kind} " + "/".join(f"{one.by_kind[method][kind][k]:.3f}" for k in (1, 5, 10))
                for kind in CATEGORY_KINDS.values()
            )
            lines.append(f"  {method:16} {cells}   {kinds}")
        lines.append(f"  quoted-line recall@5 {one.quoted_at_5:.3f}")
        lines.append(
            f"  reply gate: answer among the reply's notes {one.answer_kept:.3f};"
            f" empty for another conversation's questions {one.stranger_empty:.3f},"
            f" for random words {one.random_empty:.3f}"
        )
        if one.messages_per_s is not None:
            lines.append(f"  import: {one.messages_per_s:.1f} messages/s")
    return "\n".join(lines)


async def generated_rows(llm: LLM) -> list[QuestionRows]:
    """The bundled generated set's questions, searched once, as training rows that are never
    held out (it holds the paraphrase questions the real set has few of)."""
    found = await search_questions(load_longconv(), llm, DEFAULT_SETTINGS, evidence=True)
    scale = calibration_for(llm.embedding_model)
    return question_rows(found, lambda one: one.scale or scale)


async def generated_floors(llm: LLM) -> dict[tuple[str | None, int], float]:
    """The bundled generated set's best baseline recall in every cell (question kind, None
    for all; k): what ``vivy eval --check`` holds the retriever to on that set."""
    data = load_longconv()
    questions = [q for guild in data.guilds for q in guild.questions]
    vectors = await llm.embed([q.question for q in questions], EmbeddingTask.QUERY)
    baselines = await baseline_rankings(data, llm, vectors)
    session_of = {
        mid: session.key
        for guild in data.guilds
        for session in guild.sessions
        for mid, _, _, _ in session.messages
    }
    answers = [{mid: session_of[mid] for mid in q.answers if mid in session_of} for q in questions]
    overall, by_kind = score_methods(
        {
            method: list(zip(questions, answers, baselines[method], strict=True))
            for method in BASELINES
        }
    )
    floors: dict[tuple[str | None, int], float] = {
        (None, k): max(overall[method][k] for method in BASELINES) for k in KS
    }
    for kind in KINDS:
        for k in KS:
            floors[kind, k] = max(by_kind[method][kind][k] for method in BASELINES)
    return floors
