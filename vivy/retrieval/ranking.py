"""How found notes are ordered, gated and diversified (pure: no I/O, no clock read).

A candidate note carries what the searches found of it (:class:`Candidate`): its own match
(BM25 strength of its title, summary, topics and entities; cosine similarity of its
embedding) and its best *evidence* match (the best BM25 window and the nearest window of the
messages it was written from), the idf-weighted share of the question's terms it contains
(``coverage``), the question's terms it matched, whether a member the question names took
part, and how far it lies from a time the question names.

**Score: a weighted mean of features in [0, 1].** Per question, BM25 strengths are divided by
the best one among the candidates (BM25 scales differ by corpus and query length), cosine
similarities are mapped onto [0, 1] with the embedding model's :class:`Calibration`, and::

    score = w_note_keyword * bm25_note / best_bm25_note
          + w_evidence_keyword * bm25_window / best_bm25_window
          + w_note_vector * semantic(note) + w_evidence_vector * semantic(window)
          + w_coverage * coverage + w_word_match * spread(word_match)
          + w_name * named + w_time * in_time
          + w_recency * recency + w_channel * same_channel,  divided by the weights' sum

(the name and time terms, and their weights in the sum, only when the question names a
member or a time). ``word_match`` is how well the note's own text answers the question word
by word, each question word matched to the note's most similar word by static word vectors
(:func:`vivy.retrieval.lines.word_matches`): a note that says "apartment" matches a question
about a "flat" although no keyword does, and unlike the note's embedding it is not diluted by
the rest of the note. ``spread`` places it between the least and the best match among the
question's candidates (0 and 1): every note shares some loosely similar words with any
question, so that floor says nothing, and what tells the notes of one thread apart (the
interview, the offer) is how far each rises above it.

**Keyword support.** When the found notes hold few of the question's terms
(:meth:`Weights.supported`), the question is put in other words than the conversation's ("did
the hiring process work out?" of a job offer): the keyword features then match whatever common
word it shares with some note, so they weigh less in proportion, and the meaning features (the
word-by-word match and the embeddings, which see how close each note comes to the question)
weigh more.

The weights (:class:`Weights`) are learned on real conversations (the dev half of a public
benchmark, ``../shared/data/longconv-dev/``) by ``python scripts/learn_fusion_weights.py``:
coordinate ascent on session recall@1/5/10, judged by leaving each conversation out in turn
(the figures in ``docs/benchmarks.md`` are those held-out ones), not guessed.

**Diversity.** Notes are taken greedily: each next note maximises its score plus
``w_diversity`` times the share of the question's term weight it covers that the notes
already taken did not. A question that needs two conversations ("which city did Maya visit
after she changed jobs?") then gets both, not two near-copies of one.

**Gate.** The score orders a question's candidates but says nothing across questions: the
best keyword match of any question scores high. So a note is kept only when its *relevance*
(:func:`relevance`: the share of the question's term weight it holds, and its semantic match
on the guild's scale) reaches the gate's threshold, or half of it while the note lies in a
time the question names. A question about something memory never held ("zzzqqq xylophone",
another server's talk) gets no note at all, rather than the least bad ones. Once one note
reaches the threshold the question is about this memory, so its other notes need only a
share of it (:attr:`Gate.companion`): the second half of a two-part answer, or a note put in
other words than the question, comes along.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from vivy.llm import OFFLINE_EMBEDDING_MODEL
from vivy.storage.search_types import Candidate
from vivy.text.terms import STOPWORDS

__all__ = [
    "CALIBRATIONS",
    "EVIDENCE_FEATURES",
    "GEMINI_CALIBRATION",
    "KEYWORD_FEATURES",
    "LOCAL_CALIBRATION",
    "MEANING_FEATURES",
    "Calibration",
    "Features",
    "Gate",
    "Scored",
    "Weights",
    "calibration_for",
    "features",
    "gated",
    "passes_gate",
    "rank",
    "recency",
    "relevance",
    "semantic_evidence",
]

DAY_S = 86400.0


@dataclass(frozen=True, slots=True)
class Calibration:
    """Cosine similarities of one embedding model: ``floor`` is unrelated, ``ceiling`` clear.

    ``measured`` is False for a guessed scale (a model nobody measured, before the nightly job
    measures it on the guild's own vectors): its similarities still rank, but the gate does
    not trust them to say what is relevant.
    """

    floor: float
    ceiling: float
    measured: bool = True


#: The local model (``all-minilm-l6-v2-int8``), measured on the long-conversation eval
#: set's training guilds by ``scripts/learn_fusion_weights.py``
#: (the development package's ``measure_calibration``): the median similarity of a question
#: to a note that does not answer it, and the 90th percentile of one that does.
LOCAL_CALIBRATION = Calibration(floor=0.348, ceiling=0.586)
#: gemini-embedding-001 (768 dims, query against document): unrelated texts still score
#: about 0.5. Not yet measured (no key on the machines the eval runs on):
#: ``vivy eval --provider gemini`` prints the scale it measures.
GEMINI_CALIBRATION = Calibration(floor=0.50, ceiling=0.80, measured=False)

#: Measured scales by embedding model name.
CALIBRATIONS: dict[str, Calibration] = {OFFLINE_EMBEDDING_MODEL: LOCAL_CALIBRATION}


def calibration_for(embedding_model: str) -> Calibration:
    """The similarity scale of an embedding model: its measured one, else Gemini's."""
    return CALIBRATIONS.get(embedding_model, GEMINI_CALIBRATION)


#: The features :meth:`Weights.supported` weighs more where the found notes hold few of the
#: question's terms, and those it weighs less; the features :meth:`Weights.asking_when`
#: multiplies.
MEANING_FEATURES: tuple[str, ...] = ("word_match", "note_vector", "evidence_vector")
KEYWORD_FEATURES: tuple[str, ...] = ("note_keyword", "evidence_keyword", "coverage")
EVIDENCE_FEATURES: tuple[str, ...] = ("evidence_keyword", "evidence_vector")


@dataclass(frozen=True, slots=True)
class Weights:
    """The fusion's weights (see the module docstring) and the recency scale.

    The defaults are what ``scripts/learn_fusion_weights.py`` learns on the real dev
    conversations (both ways of writing their memory: the embedded default's notes and a
    good model's) and the bundled generated set, each guild's similarities on its measured
    scale, each step kept only while the note eval's fused ranking stays at or above its
    better single search; the same script reports them held out conversation by
    conversation. The diversity bonus, the meaning boost and the evidence's factor for a
    question asking when are learned with them.
    """

    note_keyword: float = 0.3
    evidence_keyword: float = 1.5
    note_vector: float = 0.2109
    evidence_vector: float = 2.25
    coverage: float = 2.25
    word_match: float = 0.75
    name: float = 0.112
    time: float = 9.0
    recency: float = 0.0125
    channel: float = 0.02
    diversity: float = 3.0
    #: Age in days at which recency is 0.5.
    recency_days: float = 45.0
    #: How many times more the meaning features (word match, note and evidence vectors) weigh
    #: when the found notes hold none of the question's terms, less in proportion up to
    #: ``support_terms`` terms, not at all from there (:meth:`supported`).
    meaning_boost: float = 2.25
    support_terms: int = 3
    #: How many times the evidence's keyword and vector match weigh for a question asking
    #: when something happened (:meth:`asking_when`; learned, below 1 now).
    when_evidence: float = 0.5625

    def asking_when(self) -> Weights:
        """These weights for a question asking when something happened: the evidence
        windows' match weighs :attr:`when_evidence` times as much. The note whose lines tell
        the event knows its day where a summary may mention it in passing, but the factor is
        learned, and it differs by held-out conversation (0.5 to 6): the dev set does not
        settle it."""
        return self._scaled({name: self.when_evidence for name in EVIDENCE_FEATURES})

    def lack(self, terms: int) -> float:
        """How far ``terms`` held terms fall short of :attr:`support_terms`: 1 for none, 0
        from ``support_terms`` on (and when that is 0)."""
        if self.support_terms <= 0 or terms >= self.support_terms:
            return 0.0
        return 1.0 - max(0, terms) / self.support_terms

    def supported(self, terms: int) -> Weights:
        """These weights for a question of which the found notes hold ``terms`` terms: when
        they are few (:meth:`lack`), the keyword features weigh less in proportion and the
        meaning features more (see :attr:`meaning_boost`)."""
        lack = self.lack(terms)
        if lack <= 0:
            return self
        meaning = 1.0 + self.meaning_boost * lack
        return self._scaled(
            {name: meaning for name in MEANING_FEATURES}
            | {name: 1.0 - lack for name in KEYWORD_FEATURES}
        )

    def _scaled(self, factors: Mapping[str, float]) -> Weights:
        """These weights with each feature of ``factors`` multiplied by its factor."""
        scaled: dict[str, Any] = {name: getattr(self, name) * f for name, f in factors.items()}
        return replace(self, **scaled)

    def total(self, *, time: bool = True, names: bool = True) -> float:
        """The sum of the feature weights (the time and name weights only when the question
        names a time or a member), which scales scores into [0, 1]."""
        return (
            self.note_keyword
            + self.evidence_keyword
            + self.note_vector
            + self.evidence_vector
            + self.coverage
            + self.word_match
            + (self.name if names else 0.0)
            + (self.time if time else 0.0)
            + self.recency
            + self.channel
        )


@dataclass(frozen=True, slots=True)
class Gate:
    """The relevance gate: the absolute evidence (0 to 1, :func:`relevance`) a note needs to
    enter a reply's memory.

    Unlike the score, which places a note among the question's own candidates (the best
    keyword match always scores high, whatever it matched), relevance is comparable across
    questions: the share of the question's term weight the note holds, and how similar the
    note or its best window is to the question on the guild's similarity scale.
    ``min_relevance`` was chosen on the real dev conversations, cross-validated
    (``scripts/learn_fusion_weights.py``); ``VIVY_RELEVANCE_THRESHOLD`` overrides it.
    """

    min_relevance: float = 0.35
    #: How much of relevance is the keyword coverage; the rest is the semantic match.
    keyword_share: float = 0.5
    #: The coverage a note needs when the question has no embedding (the keyword-only path,
    #: when the embedding call failed): lower, since a degraded reply should still find what
    #: was said in the question's words.
    keyword_only: float = 0.3
    #: A note holding this share of the question's term weight is kept whatever its
    #: semantic match: an embedding whose scale is not yet measured for the guild must not
    #: hide a note that says what the question asks in its own words.
    full_coverage: float = 0.9
    #: The share of the thresholds the question's other notes need once one of its notes
    #: passed: whether memory holds the question's subject is decided by its best note, and
    #: the notes beside it then need only part of that evidence. A chosen trade, not
    #: learned: lower keeps the answer more often, and more notes that do not answer.
    companion: float = 0.75

    def for_companions(self) -> Gate:
        """The gate the question's other notes pass once one of its notes passed this one."""
        return replace(
            self,
            min_relevance=self.min_relevance * self.companion,
            keyword_only=self.keyword_only * self.companion,
        )


@dataclass(frozen=True, slots=True)
class Features:
    """A candidate's features in [0, 1], as the score weighs them."""

    note_keyword: float
    evidence_keyword: float
    note_vector: float
    evidence_vector: float
    coverage: float
    name: float
    time: float
    recency: float
    channel: float
    word_match: float = 0.0
    #: The coverage of all the question's terms, those no note holds included: what the gate
    #: reads (:func:`relevance`), not weighed in the score.
    question_coverage: float = 0.0

    def score(self, weights: Weights, *, time: bool = True, names: bool = True) -> float:
        """The weighted mean of the features, in [0, 1].

        Without a time (or a member's name) in the question, that feature is left out of
        the mean, so a question that names neither is scored on what it does say.
        """
        total = weights.total(time=time, names=names)
        if total <= 0:
            return 0.0
        return (
            weights.note_keyword * self.note_keyword
            + weights.evidence_keyword * self.evidence_keyword
            + weights.note_vector * self.note_vector
            + weights.evidence_vector * self.evidence_vector
            + weights.coverage * self.coverage
            + weights.word_match * self.word_match
            + weights.name * self.name
            + weights.time * self.time
            + weights.recency * self.recency
            + weights.channel * self.channel
        ) / total


@dataclass(frozen=True, slots=True)
class Scored:
    """A ranked note: its score, the raw matches and the features behind it."""

    note_id: int
    score: float
    similarity: float | None
    bm25: float | None
    features: Features = field(compare=False)

    @property
    def semantic(self) -> float:
        """The stronger semantic evidence: the note's or its best window's."""
        return max(self.features.note_vector, self.features.evidence_vector)

    @property
    def keyword(self) -> float:
        """The keyword evidence: the question's term weight the note covers."""
        return self.features.coverage


def semantic_evidence(similarity: float | None, calibration: Calibration) -> float:
    """``similarity`` mapped linearly from [floor, ceiling] onto [0, 1] (0 when missing)."""
    if similarity is None:
        return 0.0
    span = calibration.ceiling - calibration.floor
    if span <= 0:
        return 1.0 if similarity >= calibration.ceiling else 0.0
    return min(1.0, max(0.0, (similarity - calibration.floor) / span))


def recency(age_s: float, days: float) -> float:
    """``1 / (1 + age_days / days)``; a note from the future counts as new."""
    return 1.0 / (1.0 + max(0.0, age_s) / DAY_S / days)


def _time_closeness(distance_s: float | None, span_s: float) -> float:
    """1 inside the named time, falling off over one span outside it; 0 without one."""
    if distance_s is None:
        return 0.0
    return math.exp(-distance_s / max(span_s, DAY_S))


def features(
    candidates: Iterable[Candidate],
    *,
    now: float,
    channel_id: int | None,
    calibration: Calibration,
    time_span_s: float = DAY_S,
    recency_days: float = 45.0,
    word_match: Mapping[int, float] | None = None,
) -> dict[int, Features]:
    """Each candidate's features, BM25 normalised by the best of this question's
    candidates and ``word_match`` (by note id; 0 for a note not in it) spread between their
    least and best. A note with no embedded evidence window (a topic cluster, a note older
    than its evidence, evidence switched off) is its own evidence on the vector side: its
    similarity stands in for its best window's, so the learned weights still read meaning.

    A note listed twice keeps its first entry.
    """
    matches = word_match or {}
    unique: dict[int, Candidate] = {}
    for candidate in candidates:
        unique.setdefault(candidate.note_id, candidate)
    best_note = max((c.bm25 or 0.0 for c in unique.values()), default=0.0)
    best_window = max((c.window_bm25 or 0.0 for c in unique.values()), default=0.0)
    match = [matches.get(note_id, 0.0) for note_id in unique]
    best_match = max(match, default=0.0)
    least_match = min(match, default=0.0)
    found: dict[int, Features] = {}
    for c in unique.values():
        found[c.note_id] = Features(
            note_keyword=(c.bm25 or 0.0) / best_note if best_note > 0 else 0.0,
            evidence_keyword=(c.window_bm25 or 0.0) / best_window if best_window > 0 else 0.0,
            note_vector=semantic_evidence(c.similarity, calibration),
            evidence_vector=semantic_evidence(
                c.similarity if c.window_similarity is None else c.window_similarity, calibration
            ),
            coverage=c.coverage,
            question_coverage=c.coverage if c.question_coverage is None else c.question_coverage,
            name=1.0 if c.named else 0.0,
            time=_time_closeness(c.time_distance_s, time_span_s),
            recency=recency(now - c.at, recency_days),
            channel=1.0 if channel_id is not None and c.channel_id == channel_id else 0.0,
            word_match=_spread(matches.get(c.note_id, 0.0), least_match, best_match),
        )
    return found


def _spread(value: float, least: float, best: float) -> float:
    """``value`` placed between the least and the best of the question's candidates (0 and
    1); when they all match alike, 1 if they match at all."""
    if best <= least:
        return 1.0 if best > 0 else 0.0
    return (value - least) / (best - least)


def relevance(found: Features, gate: Gate) -> float:
    """A note's absolute evidence for the question, in [0, 1]: its keyword coverage and its
    stronger semantic match (the note's or its best window's), weighed by ``gate``."""
    semantic = max(found.note_vector, found.evidence_vector)
    return gate.keyword_share * found.question_coverage + (1.0 - gate.keyword_share) * semantic


def passes_gate(scored: Scored, gate: Gate, *, semantic: bool = True) -> bool:
    """Whether the note holds enough evidence for the question (or nearly all of its terms),
    or half as much and lies in a time the question names. Without ``semantic`` evidence
    (the question could not be embedded, or its model's scale is a guess) its keyword
    coverage must reach :attr:`Gate.keyword_only`."""
    if scored.features.question_coverage >= gate.full_coverage:
        return True
    if semantic:
        evidence, needed = relevance(scored.features, gate), gate.min_relevance
    else:
        evidence, needed = scored.features.question_coverage, gate.keyword_only
    if evidence >= needed:
        return True
    return scored.features.time >= 1.0 and evidence >= needed / 2


def gated(scored: Sequence[Scored], gate: Gate, *, semantic: bool = True) -> list[Scored]:
    """The notes a reply may use, in ``scored``'s order: none unless one of them passes
    ``gate``; then each that passes its companions' share of it (:meth:`Gate.for_companions`)."""
    if not any(passes_gate(one, gate, semantic=semantic) for one in scored):
        return []
    companions = gate.for_companions()
    return [one for one in scored if passes_gate(one, companions, semantic=semantic)]


def names_unknown(
    candidates: Iterable[Candidate],
    names: Collection[str],
    term_weights: Mapping[str, float],
    unheld: Collection[str] = (),
) -> bool:
    """Whether every name the question uses (:func:`vivy.retrieval.query.proper_names`) is
    one this guild's memory never mentions: each is in no note and no window (``unheld``) or
    was searched (it is in ``term_weights``) and no candidate holds it as a whole word ("Tim"
    is not held by "time"), and no candidate is a conversation of a member the question
    names. Asked "what did Melanie paint?", a guild that never heard of a Melanie holds
    someone else's memory, however much painting its notes talk of. A capitalised stop word
    ("IT", "The") is no name; a name too common to be searched counts as known."""
    names = [name for name in names if name not in STOPWORDS]
    if not names or any(name not in term_weights and name not in unheld for name in names):
        return False
    return not any(c.named or not c.whole_terms.isdisjoint(names) for c in candidates)


def rank(
    candidates: Iterable[Candidate],
    *,
    now: float,
    channel_id: int | None,
    calibration: Calibration,
    weights: Weights = Weights(),
    gate: Gate | None = Gate(),
    limit: int | None = None,
    term_weights: Mapping[str, float] | None = None,
    time_span_s: float = DAY_S,
    word_match: Mapping[int, float] | None = None,
    names: Collection[str] = (),
    unheld: Collection[str] = (),
    asks_when: bool = False,
) -> list[Scored]:
    """Candidates scored, gated (unless ``gate`` is None) and taken best first, diversified.

    The gate lets nothing through when the question's ``names`` are all unknown to the
    guild's memory (:func:`names_unknown`; ``unheld``: the terms no note or window holds).
    ``asks_when``: the question asks when something happened (:meth:`Weights.asking_when`).

    ``term_weights`` (the question's terms and their idf) drive diversification; without
    them notes are taken by score alone. ``word_match`` holds the notes' word-by-word match
    with the question (missing: 0). When any note matches at all, the weights follow how many
    of the question's terms the candidates hold (:meth:`Weights.supported`). Ties go to the
    newer note, then the lower id.
    """
    listed: dict[int, Candidate] = {}
    for candidate in candidates:
        listed.setdefault(candidate.note_id, candidate)
    if gate is not None and names_unknown(listed.values(), names, term_weights or {}, unheld):
        return []
    if asks_when:
        weights = weights.asking_when()
    if word_match and any(word_match.values()):
        weights = weights.supported(len(frozenset().union(*(c.terms for c in listed.values()))))
    found = features(
        listed.values(),
        now=now,
        channel_id=channel_id,
        calibration=calibration,
        time_span_s=time_span_s,
        recency_days=weights.recency_days,
        word_match=word_match,
    )
    has_time = any(c.time_distance_s is not None for c in listed.values())
    has_names = any(c.named for c in listed.values())
    scored = [
        Scored(
            c.note_id,
            found[c.note_id].score(weights, time=has_time, names=has_names),
            c.similarity,
            c.bm25,
            found[c.note_id],
        )
        for c in listed.values()
    ]
    if gate is not None:
        semantic = calibration.measured and any(
            c.similarity is not None or c.window_similarity is not None for c in listed.values()
        )
        scored = gated(scored, gate, semantic=semantic)
    scored.sort(key=lambda one: (-one.score, -listed[one.note_id].at, one.note_id))
    total = weights.total(time=has_time, names=has_names)
    diversity = weights.diversity / total if total > 0 else 0.0
    return _diversified(scored, listed, diversity, term_weights or {}, limit)


def _diversified(
    scored: list[Scored],
    listed: Mapping[int, Candidate],
    diversity: float,
    term_weights: Mapping[str, float],
    limit: int | None,
) -> list[Scored]:
    """Take notes greedily by score plus ``diversity`` times the new term weight they cover."""
    total = math.fsum(term_weights.values())
    wanted = len(scored) if limit is None else min(limit, len(scored))
    if diversity <= 0 or total <= 0:
        return scored[:wanted]
    taken: list[Scored] = []
    covered: set[str] = set()
    # Notes far down the score order never win the bonus back; three per place suffice.
    pool = list(scored[: 3 * wanted])
    while pool and len(taken) < wanted:
        best_index = 0
        best_value = -math.inf
        for index, one in enumerate(pool):
            new = listed[one.note_id].terms - covered
            gain = math.fsum(term_weights.get(term, 0.0) for term in new) / total
            value = one.score + diversity * gain
            if value > best_value + 1e-12:
                best_index, best_value = index, value
        chosen = pool.pop(best_index)
        taken.append(chosen)
        covered |= listed[chosen.note_id].terms
    return taken
