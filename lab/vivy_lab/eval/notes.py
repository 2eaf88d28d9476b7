"""Offline retrieval evaluation: recall@k of vector, keyword and fused search (seed 001).

The eval set (``data/eval_set.json``, described in ``data/README.md`` of this package)
holds 40 synthetic notes and 33 questions, each with the keys of its relevant notes. The
notes are stored through the real write path (a closed buffer committed as a note, its
embedding computed from the same contextual text the note writer embeds) in a temporary
in-memory database; each question then runs the retriever's two searches once, and four
rankings of the same candidates are scored:

* ``vector``: cosine similarity alone (binary-index candidates, exact re-rank);
* ``keyword``: FTS5 BM25 alone;
* ``fused``: the retriever's fusion (:func:`vivy.retrieval.ranking.rank`) without the gate;
* ``fused+gate``: what the bot sees, weak matches dropped.

Recall@k of a question is the share of its relevant notes among the first k; the report
gives the mean over questions, overall and per question kind. Fusion is expected to do at
least as well as either search alone (the tests check recall@5).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from vivy.actors.note_writer import contextual_text
from vivy.llm.offline import OfflineLLM
from vivy.llm.port import LLM, EmbeddingTask
from vivy.memory.buffers import CloseReason
from vivy.memory.notes import NewNote, NoteType, Participant
from vivy.retrieval.lines import local_word_vectors, word_matches
from vivy.retrieval.ranking import Calibration, calibration_for, rank
from vivy.retrieval.settings import DEFAULT_SETTINGS, RetrievalSettings
from vivy.storage.port import Store
from vivy.storage.search_types import Candidate, NoteSearch
from vivy.storage.sqlite.stores import open_sqlite_store
from vivy.text.terms import query_terms

__all__ = [
    "KS",
    "METHODS",
    "EvalNote",
    "EvalQuestion",
    "EvalReport",
    "EvalSet",
    "NoteEvalSearches",
    "format_report",
    "fused_shortfall",
    "load_eval_set",
    "recall_at",
    "run_eval",
    "search_note_eval",
]

#: The cut-offs reported.
KS: tuple[int, ...] = (1, 3, 5, 10)
#: The rankings compared, in report order.
METHODS: tuple[str, ...] = ("vector", "keyword", "fused", "fused+gate")

#: Notes are dated at 20:00 UTC of their day; the eval runs the day after the last note.
_NOTE_HOUR_S = 20 * 3600.0
_DAY_S = 86400.0


@dataclass(frozen=True, slots=True)
class EvalNote:
    """One note of the eval set."""

    key: str
    channel: str
    date: str
    participants: tuple[str, ...]
    title: str
    summary: str
    topics: tuple[str, ...]
    entities: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EvalQuestion:
    """One question, the keys of its relevant notes, and its kind (keyword or semantic)."""

    q: str
    relevant: tuple[str, ...]
    kind: str


@dataclass(frozen=True, slots=True)
class EvalSet:
    """The notes and questions of an eval."""

    guild_id: int
    notes: tuple[EvalNote, ...]
    questions: tuple[EvalQuestion, ...]


@dataclass(frozen=True, slots=True)
class EvalReport:
    """Mean recall per method and cut-off, and recall@5 per method and question kind."""

    embedding_model: str
    notes: int
    questions: int
    recall: dict[str, dict[int, float]]
    by_kind: dict[str, dict[str, float]]
    kinds: dict[str, int]
    #: Mean number of notes the gate lets through, out of the first 10.
    gate_kept: float = 0.0


def load_eval_set(path: str | Path | None = None) -> EvalSet:
    """The eval set at ``path``, or the bundled one."""
    if path is None:
        text = (
            resources.files("vivy_lab.data").joinpath("eval_set.json").read_text(encoding="utf-8")
        )
    else:
        text = Path(path).read_text(encoding="utf-8")
    raw: dict[str, Any] = json.loads(text)
    notes = tuple(
        EvalNote(
            key=str(n["key"]),
            channel=str(n["channel"]),
            date=str(n["date"]),
            participants=tuple(str(p) for p in n["participants"]),
            title=str(n["title"]),
            summary=str(n["summary"]),
            topics=tuple(str(t) for t in n.get("topics", ())),
            entities=tuple(str(e) for e in n.get("entities", ())),
        )
        for n in raw["notes"]
    )
    questions = tuple(
        EvalQuestion(str(q["q"]), tuple(str(k) for k in q["relevant"]), str(q.get("kind", "")))
        for q in raw["questions"]
    )
    return EvalSet(int(raw["guild_id"]), notes, questions)


def recall_at(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """The share of ``relevant`` among the first ``k`` of ``ranked`` (1.0 if none relevant)."""
    if not relevant:
        return 1.0
    return len(set(ranked[:k]) & set(relevant)) / len(set(relevant))


def _wall(day: str) -> float:
    """20:00 UTC on ``day``."""
    midnight = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
    return midnight + _NOTE_HOUR_S


async def _store(store: Store, note: NewNote, buffer_key: int) -> int:
    """Store ``note`` the way the note writer does: through a closed buffer."""
    buffer_id = await store.buffers.open_buffer(
        note.guild_id, note.channel_id, note.channel_name, note.created_at, 1800.0
    )
    await store.buffers.close_buffer(buffer_id, note.created_at, CloseReason.INACTIVITY)
    note_id = await store.notes.commit_conversation_note(buffer_id, note)
    if note_id is None:  # pragma: no cover - the buffer was just closed
        raise RuntimeError(f"eval note {buffer_key} was not stored")
    return note_id


@dataclass(frozen=True, slots=True)
class NoteEvalSearches:
    """Every question's search of the note eval, kept so that rankings can be recomputed:
    the candidates found, the question's relevant keys, each note id's key, and the
    candidates' word-by-word match with each question, as ranking weighs it."""

    questions: tuple[EvalQuestion, ...]
    candidates: tuple[tuple[Candidate, ...], ...]
    keys: dict[int, str]
    now: float
    word_match: tuple[Mapping[int, float], ...]


async def search_note_eval(
    llm: LLM, data: EvalSet, settings: RetrievalSettings = DEFAULT_SETTINGS
) -> NoteEvalSearches:
    """Store the eval notes in a temporary database and run every question's searches once."""
    channels = {name: i for i, name in enumerate(sorted({n.channel for n in data.notes}), 1)}
    people = {
        name: i for i, name in enumerate(sorted({p for n in data.notes for p in n.participants}), 1)
    }
    texts = [
        contextual_text(n.channel, n.date, list(n.participants), list(n.topics), n.title, n.summary)
        for n in data.notes
    ]
    vectors = await llm.embed(texts, EmbeddingTask.DOCUMENT) if texts else []
    queries = [q.q for q in data.questions]
    query_vectors = await llm.embed(queries, EmbeddingTask.QUERY) if queries else []
    last_day = max((n.date for n in data.notes), default="2026-01-01")
    now = _wall(last_day) + _DAY_S - _NOTE_HOUR_S + 12 * 3600.0

    store = open_sqlite_store(":memory:", inline=True)
    try:
        keys: dict[int, str] = {}
        for index, (note, vector) in enumerate(zip(data.notes, vectors, strict=True)):
            at = _wall(note.date)
            new = NewNote(
                guild_id=data.guild_id,
                channel_id=channels[note.channel],
                channel_name=note.channel,
                note_type=NoteType.CONVERSATION,
                title=note.title,
                summary=note.summary,
                topics=note.topics,
                decisions=(),
                open_questions=(),
                entities=note.entities,
                participants=tuple(Participant(people[p], p) for p in note.participants),
                note_date=note.date,
                quality=llm.quality,
                model="eval",
                embedding=vector,
                created_at=at,
                started_at=at - 3600.0,
                ended_at=at,
            )
            keys[await _store(store, new, index)] = note.key
        found: list[tuple[Candidate, ...]] = []
        matches: list[Mapping[int, float]] = []
        for question, qvector in zip(data.questions, query_vectors, strict=True):
            terms = tuple(query_terms(question.q))
            (result,) = await store.search.find_notes(
                [
                    NoteSearch(
                        guild_id=data.guild_id,
                        vector=qvector,
                        terms=terms,
                        note_type=None,
                        candidates=max(settings.candidates, max(KS)),
                        reranked=max(settings.reranked, settings.candidates, max(KS)),
                        keyword_candidates=max(settings.keyword_candidates, max(KS)),
                    )
                ]
            )
            found.append(result.candidates)
            matches.append(
                word_matches(result.candidates, terms, result.term_weights, local_word_vectors())
            )
    finally:
        store.close()
    return NoteEvalSearches(data.questions, tuple(found), keys, now, tuple(matches))


def fused_shortfall(
    searches: NoteEvalSearches, calibration: Calibration, settings: RetrievalSettings
) -> float:
    """How far the fused ranking's recall@5 falls below the better single search's (0 when
    it does not)."""
    sums = {method: 0.0 for method in ("vector", "keyword", "fused")}
    for question, candidates, matches in zip(
        searches.questions, searches.candidates, searches.word_match, strict=True
    ):
        rankings = _rankings(
            candidates, matches, now=searches.now, calibration=calibration, settings=settings
        )
        for method in sums:
            ranked = [searches.keys[i] for i in rankings[method] if i in searches.keys]
            sums[method] += recall_at(ranked, question.relevant, 5)
    return max(0.0, max(sums["vector"], sums["keyword"]) - sums["fused"]) / max(
        1, len(searches.questions)
    )


async def run_eval(
    llm: LLM | None = None,
    eval_set: EvalSet | None = None,
    *,
    settings: RetrievalSettings = DEFAULT_SETTINGS,
) -> EvalReport:
    """Store the eval notes in a temporary database and score every ranking on every question.

    ``llm`` embeds notes and questions (the offline provider by default).
    """
    llm = llm if llm is not None else OfflineLLM()
    data = eval_set if eval_set is not None else load_eval_set()
    calibration = settings.calibration or calibration_for(llm.embedding_model)
    searches = await search_note_eval(llm, data, settings)
    scores: dict[str, dict[int, list[float]]] = {m: {k: [] for k in KS} for m in METHODS}
    kind_scores: dict[str, dict[str, list[float]]] = {m: {} for m in METHODS}
    kept: list[float] = []
    for question, candidates, matches in zip(
        data.questions, searches.candidates, searches.word_match, strict=True
    ):
        rankings = _rankings(
            candidates, matches, now=searches.now, calibration=calibration, settings=settings
        )
        kept.append(float(len(rankings["fused+gate"][: max(KS)])))
        for method, ids in rankings.items():
            ranked = [searches.keys[i] for i in ids if i in searches.keys]
            for k in KS:
                scores[method][k].append(recall_at(ranked, question.relevant, k))
            kind_scores[method].setdefault(question.kind, []).append(
                recall_at(ranked, question.relevant, 5)
            )

    kinds: dict[str, int] = {}
    for question in data.questions:
        kinds[question.kind] = kinds.get(question.kind, 0) + 1
    return EvalReport(
        embedding_model=llm.embedding_model,
        notes=len(data.notes),
        questions=len(data.questions),
        recall={m: {k: _mean(v) for k, v in per_k.items()} for m, per_k in scores.items()},
        by_kind={m: {kind: _mean(v) for kind, v in per.items()} for m, per in kind_scores.items()},
        kinds=kinds,
        gate_kept=_mean(kept),
    )


def _rankings(
    candidates: Sequence[Candidate],
    word_match: Mapping[int, float],
    *,
    now: float,
    calibration: Calibration,
    settings: RetrievalSettings,
) -> dict[str, list[int]]:
    """The note ids in the order of each method (``word_match``: the candidates' match with
    the question word by word)."""
    by_vector = sorted(
        (c for c in candidates if c.similarity is not None),
        key=lambda c: (-(c.similarity or 0.0), c.note_id),
    )
    by_keyword = sorted(
        (c for c in candidates if c.bm25 is not None),
        key=lambda c: (-(c.bm25 or 0.0), c.note_id),
    )
    fused = rank(
        candidates,
        now=now,
        channel_id=None,
        calibration=calibration,
        weights=settings.weights,
        gate=None,
        word_match=word_match,
    )
    gated = rank(
        candidates,
        now=now,
        channel_id=None,
        calibration=calibration,
        weights=settings.weights,
        gate=settings.gate,
        word_match=word_match,
    )
    return {
        "vector": [c.note_id for c in by_vector],
        "keyword": [c.note_id for c in by_keyword],
        "fused": [s.note_id for s in fused],
        "fused+gate": [s.note_id for s in gated],
    }


def _mean(values: Sequence[float]) -> float:
    """The mean of ``values`` (0 when empty)."""
    return sum(values) / len(values) if values else 0.0


def format_report(report: EvalReport) -> str:
    """The report as a text table."""
    kinds = sorted(report.kinds)
    header = ["method".ljust(11), *(f"R@{k}".rjust(6) for k in KS)]
    header += [f"{kind} R@5".rjust(max(8, len(kind) + 5)) for kind in kinds]
    lines = [
        f"retrieval eval: {report.questions} questions over {report.notes} notes,"
        f" embeddings {report.embedding_model}",
        " ".join(header),
    ]
    for method in METHODS:
        row = [method.ljust(11), *(f"{report.recall[method][k]:.3f}".rjust(6) for k in KS)]
        row += [
            f"{report.by_kind[method].get(kind, 0.0):.3f}".rjust(max(8, len(kind) + 5))
            for kind in kinds
        ]
        lines.append(" ".join(row))
    lines.append("questions by kind: " + ", ".join(f"{k} {report.kinds[k]}" for k in kinds))
    lines.append(f"the gate keeps {report.gate_kept:.1f} of the first {max(KS)} notes on average")
    return "\n".join(lines)
