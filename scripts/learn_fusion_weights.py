"""Learn the retriever's fusion weights and gate on the long-conversation eval set.

    python scripts/learn_fusion_weights.py [--eval-set PATH] [--rounds 3]

Each question's searches run once (:func:`vivy_lab.eval.longconv.search_questions`, the
offline embedding); then coordinate ascent changes one weight of
:class:`vivy.retrieval.ranking.Weights` at a time and keeps a change when it raises the
objective on the *training* guilds (every other guild): the mean over question kinds of
session recall at 1, 5 and 10, so no kind is traded away for another, less twice every
shortfall below the better plain BM25 baseline at each (kind, k), the goal being to beat it
everywhere. The *held-out* guilds
show whether the weights generalise. Then the gate's thresholds are chosen to let the fewest
notes through for questions memory cannot answer (each guild asked another guild's
questions) while the gated recall@10 stays within 0.01 of the ungated one, on the training
guilds.

It prints the weights and gate to put in ``vivy/retrieval/ranking.py`` and the figures of the
current defaults and of the learned values on both halves. Nothing is written.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence

import anyio

from vivy.llm.offline import OfflineLLM
from vivy.retrieval.ranking import OFFLINE_CALIBRATION, Gate, Weights
from vivy.retrieval.settings import DEFAULT_SETTINGS
from vivy_lab.eval.longconv import (
    KINDS,
    LongEval,
    Searched,
    bm25_index,
    bm25_sessions,
    load_longconv,
    ranked_sessions,
    search_questions,
    session_recall,
)

FEATURES = (
    "note_keyword",
    "evidence_keyword",
    "note_vector",
    "evidence_vector",
    "coverage",
    "name",
    "time",
    "recency",
    "diversity",
)
FACTORS = (0.0, 0.25, 0.5, 0.75, 1.5, 2.0, 3.0)


def recall_by_kind(
    searched: Sequence[Searched], weights: Weights, gate: Gate | None
) -> dict[str, dict[int, float]]:
    """Mean session recall at 1, 5 and 10 per question kind."""
    sums: dict[str, dict[int, list[float]]] = {kind: {1: [], 5: [], 10: []} for kind in KINDS}
    for one in searched:
        ranked = ranked_sessions(one, calibration=OFFLINE_CALIBRATION, weights=weights, gate=gate)
        for k in (1, 5, 10):
            sums[one.question.kind][k].append(session_recall(ranked, one.answers, k))
    return {
        kind: {k: sum(v) / len(v) if v else 0.0 for k, v in per.items()}
        for kind, per in sums.items()
    }


def baseline_by_kind(searched: Sequence[Searched], data: LongEval) -> dict[str, dict[int, float]]:
    """Per kind and k, the better of the two plain BM25 baselines' mean session recall."""
    windows = {guild.guild_id: bm25_index(guild) for guild in data.guilds}
    whole = {guild.guild_id: bm25_index(guild, whole=True) for guild in data.guilds}
    guild_of = {q.id: guild.guild_id for guild in data.guilds for q in guild.questions}
    table: dict[str, dict[int, float]] = {}
    for kind in KINDS:
        mine = [one for one in searched if one.question.kind == kind]
        table[kind] = {}
        for k in (1, 5, 10):
            best = 0.0
            for indexes in (windows, whole):
                recalls = [
                    session_recall(
                        bm25_sessions(indexes[guild_of[one.question.id]], one.question.question),
                        one.answers,
                        k,
                    )
                    for one in mine
                ]
                best = max(best, sum(recalls) / len(recalls) if recalls else 0.0)
            table[kind][k] = best
    return table


def objective(
    searched: Sequence[Searched],
    weights: Weights,
    gate: Gate | None,
    baseline: dict[str, dict[int, float]] | None = None,
) -> float:
    """The mean over kinds of mean recall at 1, 5 and 10, less twice every shortfall below
    the better plain BM25 baseline (when given): the goal is to beat it everywhere."""
    table = recall_by_kind(searched, weights, gate)
    value = sum(sum(per.values()) / 3 for per in table.values()) / len(table)
    if baseline is not None:
        value -= 2 * sum(
            max(0.0, baseline[kind][k] - per[k]) for kind, per in table.items() for k in per
        )
    return value


def learn(
    searched: Sequence[Searched],
    start: Weights,
    rounds: int,
    baseline: dict[str, dict[int, float]],
) -> Weights:
    """Coordinate ascent over the feature weights, on ``searched``."""
    best = start
    best_value = objective(searched, best, None, baseline)
    for round_number in range(rounds):
        improved = False
        for name in FEATURES:
            current = float(getattr(best, name))
            for factor in FACTORS:
                value = current * factor if current > 0 else factor * 0.2
                if value == current:
                    continue
                trial = dataclasses.replace(best, **{name: value})
                score = objective(searched, trial, None, baseline)
                if score > best_value + 1e-6:
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
    searched: Sequence[Searched], unanswerable: Sequence[Searched], weights: Weights
) -> Gate:
    """The gate that lets the fewest notes through for questions memory cannot answer,
    while recall@10 of the answerable ones stays within 0.01 of no gate."""

    def recall10(gate: Gate | None) -> float:
        table = recall_by_kind(searched, weights, gate)
        return sum(per[10] for per in table.values()) / len(table)

    def kept(gate: Gate | None) -> float:
        counts = [
            len(ranked_sessions(one, calibration=OFFLINE_CALIBRATION, weights=weights, gate=gate))
            for one in unanswerable
        ]
        return sum(counts) / len(counts)

    floor = recall10(None) - 0.01
    best = Gate(min_score=0.0)
    fewest = kept(best)
    print(f"no gate: {fewest:.2f} notes of 10 for unanswerable questions")
    for step in range(1, 60):
        trial = Gate(min_score=step / 100)
        if recall10(trial) < floor:
            break
        best, fewest = trial, kept(trial)
    print(f"{best}: {fewest:.2f} notes of 10 for unanswerable questions")
    return best


def show(label: str, searched: Sequence[Searched], weights: Weights, gate: Gate | None) -> None:
    """One line of figures per kind."""
    table = recall_by_kind(searched, weights, gate)
    print(f"{label}: objective {objective(searched, weights, gate):.4f}")
    for kind, per in table.items():
        print(f"  {kind:12} @1 {per[1]:.3f}  @5 {per[5]:.3f}  @10 {per[10]:.3f}")


async def main(data: LongEval, rounds: int) -> None:
    """Search once, learn on half the guilds, report both halves."""
    searched = await search_questions(data, OfflineLLM(), DEFAULT_SETTINGS, evidence=True)
    unanswerable = await search_questions(
        strangers(data), OfflineLLM(), DEFAULT_SETTINGS, evidence=True
    )
    train_guilds = {guild.guild_id for guild in data.guilds[::2]}
    train_ids = {
        q.id for guild in data.guilds if guild.guild_id in train_guilds for q in guild.questions
    }
    train = [one for one in searched if one.question.id in train_ids]
    held_out = [one for one in searched if one.question.id not in train_ids]
    defaults = DEFAULT_SETTINGS.weights
    show("defaults, training guilds", train, defaults, DEFAULT_SETTINGS.gate)
    show("defaults, held-out guilds", held_out, defaults, DEFAULT_SETTINGS.gate)
    train_data = LongEval(tuple(g for g in data.guilds if g.guild_id in train_guilds))
    learned = learn(train, defaults, rounds, baseline_by_kind(train, train_data))
    train_strangers = [one for one in unanswerable if one.question.id[9:] in train_ids]
    gate = calibrate_gate(train, train_strangers, learned)
    show("learned, training guilds", train, learned, gate)
    show("learned, held-out guilds", held_out, learned, gate)
    print(learned)
    print(gate)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval-set", default=None)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    anyio.run(main, load_longconv(args.eval_set), args.rounds)
