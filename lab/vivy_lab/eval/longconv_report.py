"""What the long-conversation eval reports (:mod:`vivy_lab.eval.longconv`): the methods,
cut-offs and question kinds it compares, its goals, the report itself and its text form."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vivy.retrieval.ranking import Calibration

__all__ = [
    "BASELINES",
    "KINDS",
    "KS",
    "METHODS",
    "PARAPHRASE_GOAL",
    "QUOTED_GOAL",
    "QUOTED_KS",
    "LongReport",
    "below_baseline",
    "format_long_report",
    "mean",
    "short_of_goals",
]

#: The cut-offs reported.
KS: tuple[int, ...] = (1, 3, 5, 10)
#: The question kinds, in report order.
KINDS: tuple[str, ...] = ("single-hop", "multi-hop", "temporal", "open-domain", "paraphrase")
#: The retrievers compared, in report order.
METHODS: tuple[str, ...] = (
    "shipped",
    "default_scale",
    "keyword_only",
    "notes_only",
    "bm25_raw",
    "bm25_session",
    "dense",
    "rrf",
)
#: The plain retrievers (:mod:`vivy_lab.eval.baselines`) the shipped one must not fall below.
BASELINES: tuple[str, ...] = ("bm25_raw", "bm25_session", "dense", "rrf")
#: The cut-offs of quoted-line recall: a reply's memory quotes under its first notes only.
QUOTED_KS: tuple[int, ...] = (1, 3, 5)
#: The eval's goals besides the baselines: paraphrase recall@5 and quoted-line recall@5.
PARAPHRASE_GOAL = 0.80
QUOTED_GOAL = 0.80


def mean(values: Sequence[float]) -> float:
    """The mean of ``values``; 0 when empty."""
    return sum(values) / len(values) if values else 0.0


@dataclass(frozen=True, slots=True)
class LongReport:
    """Session recall per method, k and kind; turn-level quoted-line recall of the shipped
    retriever and of its keyword-only path; question counts; empty results."""

    embedding_model: str
    guilds: int
    sessions: int
    messages: int
    questions: int
    kinds: Mapping[str, int]
    recall: Mapping[str, Mapping[int, float]]
    by_kind: Mapping[str, Mapping[str, Mapping[int, float]]]
    #: Quoted-line recall by path ("shipped", "keyword_only"), then k, overall and per kind.
    quoted: Mapping[str, Mapping[int, float]]
    quoted_by_kind: Mapping[str, Mapping[str, Mapping[int, float]]]
    #: Questions the shipped retriever answered with nothing although a note or its
    #: evidence shares a content word with them.
    empty_with_words: int
    #: The embedding model's similarity scale measured on this set's questions, its default
    #: one, and each guild's as the nightly job measures it (by guild id; a guild left on the
    #: default is not listed).
    measured: Calibration
    used: Calibration
    guild_scales: Mapping[int, Calibration]


def below_baseline(report: LongReport) -> list[str]:
    """Where the shipped retriever's recall at 1, 5 or 10, overall or in a question kind, is
    below a baseline (:data:`BASELINES`); empty when it is at or above all of them."""
    found: list[str] = []
    for k in (1, 5, 10):
        for kind in (None, *KINDS):
            table = (
                report.recall if kind is None else {m: v[kind] for m, v in report.by_kind.items()}
            )
            shipped = table["shipped"][k]
            label = f"recall@{k}" if kind is None else f"{kind} recall@{k}"
            for baseline in BASELINES:
                if shipped < table[baseline][k]:
                    found.append(
                        f"{label} {shipped:.3f} is below {baseline}'s {table[baseline][k]:.3f}"
                    )
    return found


def short_of_goals(report: LongReport, *, targets: bool = True) -> list[str]:
    """Where the shipped retriever misses the eval's other goals: strictly above its own
    keyword-only path overall at 5, and (with ``targets``) paraphrase recall@5 and
    quoted-line recall@5 of at least :data:`PARAPHRASE_GOAL` and :data:`QUOTED_GOAL`; empty
    when it meets them all."""
    found: list[str] = []
    shipped, keyword = report.recall["shipped"][5], report.recall["keyword_only"][5]
    if shipped <= keyword:
        found.append(f"recall@5 {shipped:.3f} is not above the keyword-only path's {keyword:.3f}")
    if not targets:
        return found
    paraphrase = report.by_kind["shipped"]["paraphrase"][5]
    if paraphrase < PARAPHRASE_GOAL:
        found.append(f"paraphrase recall@5 {paraphrase:.3f} is below {PARAPHRASE_GOAL:.2f}")
    lines = report.quoted["shipped"][5]
    if lines < QUOTED_GOAL:
        found.append(f"quoted-line recall@5 {lines:.3f} is below {QUOTED_GOAL:.2f}")
    return found


def format_long_report(report: LongReport) -> str:
    """The report as text: one table overall, one per question kind."""
    lines = [
        f"long-conversation eval: {report.questions} questions, {report.guilds} guilds,"
        f" {report.sessions} conversations, {report.messages} messages,"
        f" embeddings {report.embedding_model}",
        "session recall@k    " + " ".join(f"@{k}".rjust(6) for k in KS),
    ]
    for method in METHODS:
        values = " ".join(f"{report.recall[method][k]:.3f}".rjust(6) for k in KS)
        lines.append(f"{method.ljust(19)} {values}")
    for kind in KINDS:
        lines.append(f"{kind} ({report.kinds.get(kind, 0)} questions)")
        for method in METHODS:
            values = " ".join(f"{report.by_kind[method][kind][k]:.3f}".rjust(6) for k in KS)
            lines.append(f"  {method.ljust(17)} {values}")
    lines.append(
        "quoted-line recall@k (answer messages among the lines quoted under the first k notes)"
    )
    lines.append(" " * 26 + " ".join(f"@{k}".rjust(6) for k in QUOTED_KS))
    for part in (None, *KINDS):
        for path in ("shipped", "keyword_only"):
            table = report.quoted[path] if part is None else report.quoted_by_kind[path][part]
            label = path if part is None else f"  {part} {path}"
            values = " ".join(f"{table[k]:.3f}".rjust(6) for k in QUOTED_KS)
            lines.append(f"{label.ljust(25)} {values}")
    lines.append(f"empty results with a shared content word (shipped): {report.empty_with_words}")
    lines.append(
        f"similarity scale of {report.embedding_model}: measured on the questions floor"
        f" {report.measured.floor:.3f} ceiling {report.measured.ceiling:.3f}; the model's default"
        f" floor {report.used.floor:.3f} ceiling {report.used.ceiling:.3f}"
    )
    scales = list(report.guild_scales.values())
    if scales:
        lines.append(
            f"measured from each guild's vectors ({len(scales)} of {report.guilds} guilds, as"
            f" the nightly job does): floor {min(s.floor for s in scales):.3f}"
            f"-{max(s.floor for s in scales):.3f} (mean {mean([s.floor for s in scales]):.3f}),"
            f" ceiling {min(s.ceiling for s in scales):.3f}-{max(s.ceiling for s in scales):.3f}"
            f" (mean {mean([s.ceiling for s in scales]):.3f}); shipped ranks on them,"
            " default_scale on the default"
        )
    return "\n".join(lines)
