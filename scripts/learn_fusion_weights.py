"""Learn the retriever's fusion weights and gate on the long-conversation eval set.

    python scripts/learn_fusion_weights.py [--eval-set PATH] [--rounds 3] [--hold MARGIN]

Each question's searches run once (:func:`vivy_lab.eval.longconv.search_questions`, with the
offline provider's local embedding model); the model's similarity scale is measured on the
*training* guilds (every other guild; :func:`vivy_lab.eval.longconv.measure_calibration`)
and ranks with it (it also prints the two constants with which the nightly job's measurement
from a guild's own vectors, :mod:`vivy.retrieval.scale`, gives that scale on those guilds);
then coordinate ascent changes one weight of :class:`vivy.retrieval.ranking.Weights` at a
time and keeps a change when it raises the objective on the training guilds: the mean over
question kinds of session recall at 1, 5 and 10, so no kind is traded away for another, less
twice every shortfall below the best baseline (BM25 raw, BM25 sessions, dense, RRF) at each
(kind, k), the goal being to beat them everywhere. The *held-out* guilds show whether the
weights generalise. With ``--hold MARGIN`` a change is kept only if the whole set (both
halves, ranked as ``vivy eval`` ranks it) stays at least MARGIN above the best baseline at
each (kind, k) and overall, and the note eval's fused recall@5 at or above its better single
search: what ``vivy eval --check`` demands, with a margin so that a tie does not pass or fail
on rounding. Then the gate's thresholds are chosen to let the fewest notes through for
questions memory cannot answer (each guild asked another guild's questions) while the gated
recall@10 stays within 0.01 of the ungated one in every question kind, on the training
guilds.

It prints the calibration, weights and gate to put in ``vivy/retrieval/ranking.py`` and the
figures of the current defaults and of the learned values on both halves. Nothing is
written.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import replace

import anyio

from vivy.llm.offline import OfflineLLM
from vivy.llm.port import EmbeddingTask
from vivy.retrieval.ranking import LOCAL_CALIBRATION, Calibration, Gate, Weights
from vivy.retrieval.settings import DEFAULT_SETTINGS
from vivy_lab.eval.longconv import (
    BASELINES,
    KINDS,
    LongEval,
    Searched,
    baseline_rankings,
    guild_statistics,
    load_longconv,
    measure_calibration,
    ranked_sessions,
    search_questions,
    session_recall,
    spreads_for,
)
from vivy_lab.eval.notes import NoteEvalSearches, fused_shortfall, load_eval_set, search_note_eval

FEATURES = (
    "note_keyword",
    "evidence_keyword",
    "note_vector",
    "evidence_vector",
    "coverage",
    "word_match",
    "word_match_boost",
    "name",
    "time",
    "recency",
    "diversity",
)
FACTORS = (0.0, 0.25, 0.5, 0.75, 1.5, 2.0, 3.0)
#: How much a shortfall below a baseline costs, against a gain in mean recall.
PENALTY = 6.0


def recall_by_kind(
    searched: Sequence[Searched], calibration: Calibration, weights: Weights, gate: Gate | None
) -> dict[str, dict[int, float]]:
    """Mean session recall at 1, 5 and 10 per question kind."""
    sums: dict[str, dict[int, list[float]]] = {kind: {1: [], 5: [], 10: []} for kind in KINDS}
    for one in searched:
        ranked = ranked_sessions(one, calibration=calibration, weights=weights, gate=gate)
        for k in (1, 5, 10):
            sums[one.question.kind][k].append(session_recall(ranked, one.answers, k))
    return {
        kind: {k: sum(v) / len(v) if v else 0.0 for k, v in per.items()}
        for kind, per in sums.items()
    }


def baseline_by_kind(
    searched: Sequence[Searched], rankings: dict[str, dict[str, list[str]]]
) -> dict[str, dict[int, float]]:
    """Per kind and k, the best baseline's mean session recall (``rankings``: each baseline's
    sessions by question id)."""
    table: dict[str, dict[int, float]] = {}
    for kind in KINDS:
        mine = [one for one in searched if one.question.kind == kind]
        table[kind] = {}
        for k in (1, 5, 10):
            best = 0.0
            for method in BASELINES:
                recalls = [
                    session_recall(rankings[method][one.question.id], one.answers, k)
                    for one in mine
                ]
                best = max(best, sum(recalls) / len(recalls) if recalls else 0.0)
            table[kind][k] = best
    return table


def objective(
    searched: Sequence[Searched],
    calibration: Calibration,
    weights: Weights,
    gate: Gate | None,
    baseline: dict[str, dict[int, float]] | None = None,
    notes: NoteEvalSearches | None = None,
) -> float:
    """The mean over kinds of mean recall at 1, 5 and 10, less twice every shortfall below
    the best baseline (when given), and twice the note eval's fused recall@5 shortfall below
    its better single search (when given): the goal is to beat them everywhere."""
    table = recall_by_kind(searched, calibration, weights, gate)
    value = sum(sum(per.values()) / 3 for per in table.values()) / len(table)
    if baseline is not None:
        value -= PENALTY * sum(
            max(0.0, baseline[kind][k] - per[k]) for kind, per in table.items() for k in per
        )
    if notes is not None:
        settings = dataclasses.replace(DEFAULT_SETTINGS, weights=weights)
        value -= PENALTY * fused_shortfall(notes, calibration, settings)
    return value


def learn(
    searched: Sequence[Searched],
    calibration: Calibration,
    start: Weights,
    rounds: int,
    baseline: dict[str, dict[int, float]],
    notes: NoteEvalSearches,
    holds: Callable[[Weights], bool] | None = None,
) -> Weights:
    """Coordinate ascent over the feature weights, on ``searched`` (and the note eval),
    keeping only weights that ``holds`` accepts (when given)."""
    best = start
    best_value = objective(searched, calibration, best, None, baseline, notes)
    for round_number in range(rounds):
        improved = False
        for name in FEATURES:
            current = float(getattr(best, name))
            for factor in FACTORS:
                value = current * factor if current > 0 else factor * 0.2
                if value == current:
                    continue
                trial = dataclasses.replace(best, **{name: value})
                score = objective(searched, calibration, trial, None, baseline, notes)
                if score > best_value + 1e-6 and (holds is None or holds(trial)):
                    best, best_value, improved = trial, score, True
        print(f"round {round_number + 1}: objective {best_value:.4f}")
        if not improved:
            break
    return best


def strangers(data: LongEval) -> LongEval:
    """Each guild asked the next guild's questions: memory holds no answer to them."""
    guilds = data.guilds
    return LongEval(
        tuple(
            dataclasses.replace(
                guild,
                questions=tuple(
                    dataclasses.replace(q, id=f"stranger-{q.id}", answers=())
                    for q in guilds[(index + 1) % len(guilds)].questions
                ),
            )
            for index, guild in enumerate(guilds)
        )
    )


def calibrate_gate(
    searched: Sequence[Searched],
    unanswerable: Sequence[Searched],
    calibration: Calibration,
    weights: Weights,
) -> Gate:
    """The gate that lets the fewest notes through for questions memory cannot answer,
    while recall@10 of the answerable ones stays within 0.01 of no gate in every kind."""

    def recall10(gate: Gate | None) -> dict[str, float]:
        table = recall_by_kind(searched, calibration, weights, gate)
        return {kind: per[10] for kind, per in table.items()}

    def kept(gate: Gate | None) -> float:
        counts = [
            len(ranked_sessions(one, calibration=calibration, weights=weights, gate=gate))
            for one in unanswerable
        ]
        return sum(counts) / len(counts)

    floor = {kind: value - 0.01 for kind, value in recall10(None).items()}
    best = Gate(min_score=0.0)
    fewest = kept(best)
    print(f"no gate: {fewest:.2f} notes of 10 for unanswerable questions")
    for step in range(1, 60):
        trial = Gate(min_score=step / 100)
        if any(value < floor[kind] for kind, value in recall10(trial).items()):
            break
        best, fewest = trial, kept(trial)
    print(f"{best}: {fewest:.2f} notes of 10 for unanswerable questions")
    return best


def show(
    label: str,
    searched: Sequence[Searched],
    calibration: Calibration,
    weights: Weights,
    gate: Gate | None,
) -> None:
    """One line of figures per kind."""
    table = recall_by_kind(searched, calibration, weights, gate)
    print(f"{label}: objective {objective(searched, calibration, weights, gate):.4f}")
    for kind, per in table.items():
        print(f"  {kind:12} @1 {per[1]:.3f}  @5 {per[5]:.3f}  @10 {per[10]:.3f}")


def holding(
    searched: Sequence[Searched],
    rankings: dict[str, dict[str, list[str]]],
    notes: NoteEvalSearches,
    margin: float,
) -> Callable[[Weights], bool]:
    """Whether weights keep the whole of ``searched`` ``margin`` above the best baseline at
    1, 5 and 10, overall and in every kind, and the note eval's fused recall@5 at or above
    its better single search (``rankings``: each baseline's sessions by question id)."""
    table = baseline_by_kind(searched, rankings)
    overall = {
        k: max(
            sum(session_recall(rankings[m][one.question.id], one.answers, k) for one in searched)
            / len(searched)
            for m in BASELINES
        )
        for k in (1, 5, 10)
    }

    def holds(weights: Weights) -> bool:
        """See :func:`holding`."""
        gate = DEFAULT_SETTINGS.gate
        ranked = [
            ranked_sessions(one, calibration=one.scale or default, weights=weights, gate=gate)
            for one in searched
        ]
        for k in (1, 5, 10):
            recalls = [
                session_recall(r, one.answers, k) for r, one in zip(ranked, searched, strict=True)
            ]
            if sum(recalls) / len(recalls) < overall[k] + margin:
                return False
            for kind in KINDS:
                pairs = zip(recalls, searched, strict=True)
                mine = [value for value, one in pairs if one.question.kind == kind]
                if mine and sum(mine) / len(mine) < table[kind][k] + margin:
                    return False
        settings = replace(DEFAULT_SETTINGS, weights=weights)
        return fused_shortfall(notes, default, settings) <= 0.0

    default = DEFAULT_SETTINGS.calibration or LOCAL_CALIBRATION
    return holds


async def main(data: LongEval, rounds: int, hold: float | None) -> None:
    """Search once, measure the scale and learn on half the guilds, report both halves."""
    llm = OfflineLLM()
    questions = [q.question for guild in data.guilds for q in guild.questions]
    vectors = await llm.embed(questions, EmbeddingTask.QUERY)
    searched = await search_questions(data, llm, DEFAULT_SETTINGS, evidence=True, vectors=vectors)
    unanswerable = await search_questions(strangers(data), llm, DEFAULT_SETTINGS, evidence=True)
    found = await baseline_rankings(data, llm, vectors)
    ids = [q.id for guild in data.guilds for q in guild.questions]
    rankings = {method: dict(zip(ids, found[method], strict=True)) for method in BASELINES}
    train_guilds = {guild.guild_id for guild in data.guilds[::2]}
    train_ids = {
        q.id for guild in data.guilds if guild.guild_id in train_guilds for q in guild.questions
    }
    train = [one for one in searched if one.question.id in train_ids]
    held_out = [one for one in searched if one.question.id not in train_ids]
    calibration = measure_calibration(train)
    print(f"measured on the training guilds: {calibration}")
    statistics = await guild_statistics(data, llm)
    floor_spreads, ceiling_spreads = spreads_for(
        [statistics[g] for g in sorted(train_guilds) if g in statistics], calibration
    )
    print(
        "the same scale from the training guilds' own vectors (vivy.retrieval.scale):"
        f" FLOOR_SPREADS = {floor_spreads:.2f}, CEILING_SPREADS = {ceiling_spreads:.2f}"
    )
    defaults = DEFAULT_SETTINGS.weights
    show("defaults, training guilds", train, calibration, defaults, DEFAULT_SETTINGS.gate)
    show("defaults, held-out guilds", held_out, calibration, defaults, DEFAULT_SETTINGS.gate)
    baseline = baseline_by_kind(train, rankings)
    held_baseline = baseline_by_kind(held_out, rankings)
    for label, table in (("training", baseline), ("held-out", held_baseline)):
        for kind, per in table.items():
            figures = f"@1 {per[1]:.3f}  @5 {per[5]:.3f}  @10 {per[10]:.3f}"
            print(f"  best baseline, {label} guilds, {kind:12} {figures}")
    notes = await search_note_eval(llm, load_eval_set())
    shortfall = fused_shortfall(notes, calibration, DEFAULT_SETTINGS)
    print(f"note eval: fused recall@5 below the better single search by {shortfall:.3f}")
    holds = None if hold is None else holding(searched, rankings, notes, hold)
    learned = learn(train, calibration, defaults, rounds, baseline, notes, holds)
    shortfall = fused_shortfall(notes, calibration, replace(DEFAULT_SETTINGS, weights=learned))
    print(f"note eval, learned: fused recall@5 below the better single search by {shortfall:.3f}")
    train_strangers = [one for one in unanswerable if one.question.id[9:] in train_ids]
    gate = calibrate_gate(train, train_strangers, calibration, learned)
    show("learned, training guilds", train, calibration, learned, gate)
    show("learned, held-out guilds", held_out, calibration, learned, gate)
    print(calibration)
    print(learned)
    print(gate)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval-set", default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hold", type=float, default=None, metavar="MARGIN")
    args = parser.parse_args()
    anyio.run(main, load_longconv(args.eval_set), args.rounds, args.hold)
