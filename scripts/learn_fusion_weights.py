"""Learn the retriever's fusion weights and reply gate on the real dev conversations.

    python scripts/learn_fusion_weights.py [--dev-data PATH] [--rounds 3]

The dev set (``../shared/data/longconv-dev/``, five real conversations) is written into memory
both ways ``vivy eval --set longconv-dev`` does (imported by the embedded default; stored
with each session's summary, as a good model would write it), and every question's searches
run once. Then:

* **weights**: coordinate ascent (:func:`vivy_lab.eval.learning.ascend`) on session recall
  at 1, 5 and 10, from every feature weighted alike (the meaning boost and the diversity
  bonus included). Each conversation is held out in turn and ranked by weights learned on
  the other four, in both ways at once, and on the bundled generated set (never held out: it
  keeps the paraphrase questions the real set has few of in the training): those held-out
  figures are what the weights do on conversations they were not fit to, and the only ones
  to report. A step is kept only while what ``vivy eval --check`` demands holds: the small
  note eval's fused ranking at or above its better single search, and the generated set's
  recall at or above its best baseline in every kind at every k. The weights to ship are
  learned the same way on all five and the generated set; the generated set's figures with
  them are printed against :data:`GENERATED_FLOORS` less :data:`REGRESSION_SLACK` (a
  regression report: since evidence windows are pooled from lines embedded once, no weights
  the ascent reaches keep them all, so they do not constrain a step). The factor of the evidence
  for questions asking when is learned with the weights (its slot follows the diversity
  bonus). Then the weight of a note's best quoted line, by which the first notes are ordered
  again (:data:`vivy.retrieval.ranked.LINE_WEIGHT`), is chosen on the same questions with
  the weights learned (:func:`vivy_lab.eval.learning.with_line_weight`), held out the same
  way.
* **reply gate**: for each held-out conversation, the gate (keyword share and threshold of
  :class:`vivy.retrieval.ranking.Gate`; its companion share is a fixed choice, not learned)
  that leaves the most of another conversation's questions with an empty reply while the
  other four keep their answer among the reply's notes at most :data:`GATE_COST` less often
  than with no gate, chosen on the embedded default's searches; the held-out rates of both
  ways are printed, and the gate to ship is chosen the same way on all five.
* **quoted lines**: for each held-out conversation, the rank share of the evidence budget
  (:data:`vivy.retrieval.context.RANK_SHARE`) and the share of a question's score its answer
  takes (:data:`vivy.retrieval.lines.ANSWER_SHARE`) that quote the most answer messages
  under the first five notes of the other four, in both ways at once; the held-out
  quoted-line recall is printed, and the shares to ship are chosen the same way on all five.

It prints what to put in ``vivy/retrieval/ranking.py``, ``vivy/retrieval/context.py`` and
``vivy/retrieval/lines.py``;
nothing is written.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import anyio
import numpy as np
import numpy.typing as npt

from vivy.llm.offline import OfflineLLM
from vivy.retrieval.ranking import Gate, Weights, calibration_for
from vivy.retrieval.settings import DEFAULT_SETTINGS
from vivy_lab.eval.learning import (
    ascend,
    cross_validate,
    fusion_holds,
    line_weight_of,
    question_rows,
    recall_holds,
    recall_of,
    weights_from,
    with_line_weight,
)
from vivy_lab.eval.longconv import (
    QUOTED_NOTES,
    Searched,
    quoted_recall,
    ranked_sessions,
    requoted,
    session_recall,
)
from vivy_lab.eval.longconv_dev import DEFAULT_DEV_PATH, DevRun, load_dev
from vivy_lab.eval.longconv_dev_run import (
    NEUTRAL_START,
    generated_floors,
    generated_rows,
    run_default,
    run_stand_in,
)
from vivy_lab.eval.notes import load_eval_set, search_note_eval

#: A learned vector: the weights in :data:`~vivy_lab.eval.learning.LEARNED` order, then the
#: meaning boost, the diversity bonus, the evidence's factor for when and the best line's weight.
Vector = npt.NDArray[np.float64]
#: How much less often the gate may leave a question's answer out of the reply's notes.
GATE_COST = 0.03
#: The generated set's recall (by question kind, None for all, and k) before learning on
#: real conversations (docs/benchmarks.md, 2026-11-26), and how far learning may lower it.
GENERATED_FLOORS: dict[tuple[str | None, int], float] = {
    (None, 1): 0.481,
    (None, 3): 0.753,
    (None, 5): 0.847,
    (None, 10): 0.930,
    ("paraphrase", 5): 0.802,
}
REGRESSION_SLACK = 0.02
SHARES = (0.3, 0.5, 0.7)
THRESHOLDS = tuple(round(0.3 + 0.05 * step, 2) for step in range(10))
RANK_SHARES = (0.0, 0.1, 0.2, 0.3, 0.4, 0.6, 0.8, 1.2)
ANSWER_SHARES = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7)


def _group(one: Searched) -> str:
    return one.question.id.split("/")[0].removeprefix("stranger-")


def _replies(
    searched: Sequence[Searched], vector: Vector, gate: Gate | None, model: str
) -> list[list[str]]:
    """The sessions of each question's reply, ranked by the learned ``vector`` (its weights
    and its best line's weight) and gated by ``gate``."""
    default = calibration_for(model)
    weights, line_weight = weights_from(vector, Weights()), line_weight_of(vector)
    return [
        ranked_sessions(
            one,
            calibration=one.scale or default,
            weights=weights,
            gate=gate,
            limit=DEFAULT_SETTINGS.conversation_notes,
            line_weight=line_weight,
        )
        for one in searched
    ]


def _outcomes(
    run: DevRun, vector: Vector, gate: Gate | None, model: str, groups: set[str]
) -> tuple[list[bool], list[bool]]:
    """For each answerable question of ``groups``, whether it keeps an answer among the
    reply's notes; for each of their stranger questions, whether its reply is empty."""
    answerable = [one for one in run.searched if _group(one) in groups]
    strangers = [
        one for one in run.strangers if one.question.kind == "stranger" and _group(one) in groups
    ]
    kept = [
        bool(set(r) & set(one.answers.values()))
        for one, r in zip(answerable, _replies(answerable, vector, gate, model), strict=True)
    ]
    return kept, [not r for r in _replies(strangers, vector, gate, model)]


def _rates(
    run: DevRun, vector: Vector, gate: Gate | None, model: str, groups: set[str]
) -> tuple[float, float]:
    """Share of answerable questions of ``groups`` keeping an answer among the reply's notes,
    and share of their stranger questions left with an empty reply."""
    kept, empty = _outcomes(run, vector, gate, model, groups)
    return float(np.mean(kept)), float(np.mean(empty))


def choose_gate(run: DevRun, vector: Vector, model: str, groups: set[str]) -> Gate:
    """The gate of the module docstring, chosen on ``groups`` with the learned ``vector``."""
    floor = _rates(run, vector, None, model, groups)[0] - GATE_COST
    best, most = Gate(min_relevance=0.0), -1.0
    for share in SHARES:
        for threshold in THRESHOLDS:
            gate = replace(Gate(), min_relevance=threshold, keyword_share=share)
            kept, empty = _rates(run, vector, gate, model, groups)
            if kept >= floor and empty > most:
                best, most = gate, empty
    return best


Shares = tuple[float, float]


def _quoted(searched: Sequence[Searched], shares: Shares) -> list[float]:
    """Each question's quoted-line recall under the first notes, its lines chosen with the
    answer share and the budget shared with the rank share of ``shares``."""
    rank_share, answer_share = shares
    return [
        quoted_recall(
            requoted(one.shipped, DEFAULT_SETTINGS, rank_share, answer_share),
            one.answers,
            QUOTED_NOTES,
        )
        for one in searched
    ]


def quoting_table(searched: Sequence[Searched]) -> dict[Shares, list[float]]:
    """:func:`_quoted` of ``searched`` for every rank share and answer share tried."""
    return {
        (rank, answer): _quoted(searched, (rank, answer))
        for rank in RANK_SHARES
        for answer in ANSWER_SHARES
    }


def choose_quoting(
    table: Mapping[Shares, list[float]], searched: Sequence[Searched], groups: set[str]
) -> Shares:
    """The rank and answer shares quoting the most answer messages of ``groups``'s
    questions (of ``table``, in ``searched``'s order); ties to the smaller shares."""
    mine = [index for index, one in enumerate(searched) if _group(one) in groups]
    return max(
        table,
        key=lambda shares: (float(np.mean([table[shares][i] for i in mine])), -sum(shares)),
    )


def report_quoting(runs: Sequence[DevRun], groups: set[str]) -> None:
    """Print each run's held-out quoted-line recall and the rank and answer shares to ship."""
    both = [one for run in runs for one in run.searched]
    table = quoting_table(both)
    chosen = {group: choose_quoting(table, both, groups - {group}) for group in sorted(groups)}
    for run in runs:
        held = [
            figure
            for group, shares in chosen.items()
            for figure in _quoted([one for one in run.searched if _group(one) == group], shares)
        ]
        print(f"quoted-line recall@{QUOTED_NOTES} held out, {run.name}: {np.mean(held):.3f}")
    print(f"(rank share, answer share) by held-out conversation: {chosen}")
    rank_share, answer_share = choose_quoting(table, both, groups)
    print(f"RANK_SHARE = {rank_share}; ANSWER_SHARE = {answer_share}")


def main(path: Path, rounds: int) -> None:
    """Search once both ways, cross-validate, and print the weights and gate to ship."""
    dev = load_dev(path)
    llm = OfflineLLM()
    with tempfile.TemporaryDirectory(prefix="vivy-learn-") as folder:
        default = run_default(dev, llm, Path(folder))
    stand_in = anyio.run(run_stand_in, dev, llm)
    model = llm.embedding_model
    scale = calibration_for(model)
    runs = (default, stand_in)
    rows = [question_rows(run.searched, lambda one: one.scale or scale) for run in runs]
    generated = anyio.run(generated_rows, llm)
    fused = fusion_holds(anyio.run(search_note_eval, llm, load_eval_set()), Weights())
    beats = recall_holds(generated, anyio.run(generated_floors, llm))

    def holds(vector: npt.NDArray[np.float64]) -> bool:
        return bool(fused(vector) and beats(vector))

    ranked, folds = cross_validate(
        rows[0] + rows[1], NEUTRAL_START, rounds=rounds, extra=generated, holds=holds
    )
    split = len(rows[0])
    for run, mine, held in zip(runs, rows, (ranked[:split], ranked[split:]), strict=True):
        figures = " ".join(
            f"@{k} {np.mean([session_recall(r, row.answers, k) for row, r in zip(mine, held, strict=True)]):.3f}"  # noqa: E501
            for k in (1, 3, 5, 10)
        )
        print(f"held out, {run.name}: {figures}")
    groups = set(folds)
    gated: dict[str, tuple[list[bool], list[bool]]] = {run.name: ([], []) for run in runs}
    for group, vector in folds.items():
        gate = choose_gate(default, vector, model, groups - {group})
        rates = []
        for run in runs:
            kept, empty = _outcomes(run, vector, gate, model, {group})
            gated[run.name][0].extend(kept)
            gated[run.name][1].extend(empty)
            rates.append(f"{run.name}: kept {np.mean(kept):.3f}, empty {np.mean(empty):.3f}")
        print(f"fold {group}: {np.round(vector, 3)}; {gate}; {'; '.join(rates)}")
    for name, (kept, empty) in gated.items():
        print(
            f"reply gate held out, {name}: answer kept {np.mean(kept):.3f},"
            f" strangers empty {np.mean(empty):.3f}"
        )
    training = rows[0] + rows[1] + generated
    vector = ascend(training, NEUTRAL_START, rounds=rounds, holds=holds)
    vector = with_line_weight(training, vector, holds)
    print(weights_from(vector, Weights()))
    print(f"LINE_WEIGHT = {vector[-1]}")
    for (kind, k), floor in GENERATED_FLOORS.items():
        figure = recall_of(generated, vector, kind, k)
        short = (
            "" if figure >= floor - REGRESSION_SLACK else f" (below {floor} - {REGRESSION_SLACK})"
        )
        print(f"generated set, {kind or 'all'} @{k}: {figure:.3f}{short}")
    print(choose_gate(default, vector, model, groups))
    report_quoting(runs, groups)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dev-data", type=Path, default=DEFAULT_DEV_PATH)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    main(args.dev_data, args.rounds)
