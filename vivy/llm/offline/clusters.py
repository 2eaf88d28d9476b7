"""Topic clusters: a day's notes grouped by the salient phrases they share."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from vivy.llm.offline.phrases import Term, salient_terms
from vivy.llm.offline.text import (
    OFFLINE_LABEL,
    capitalise,
    clip,
    join_words,
    name_list,
    unique,
)
from vivy.llm.schemas import ClusterDraft, ClusterInput, DraftCluster, NoteView
from vivy.text.terms import COMPOUND

__all__ = ["cluster_notes"]

_QUOTED = re.compile(r"“([^”]*)”")


def _note_terms(note: NoteView) -> list[Term]:
    """Salient phrases of a note; the title counts twice.

    Of an offline summary only the quoted lines count: its opening restates the title and
    lists people, which says nothing about the topic.
    """
    texts = [(0, note.title), (1, note.title)]
    if note.summary.startswith(OFFLINE_LABEL):
        texts.extend((2, quote) for quote in _QUOTED.findall(note.summary))
    else:
        texts.append((2, note.summary))
    texts.extend((line.author_id, line.text) for line in note.lines)
    names = {part for name in note.participants for part in COMPOUND.findall(name)}
    return salient_terms(texts, exclude=names)


def cluster_notes(payload: ClusterInput) -> ClusterDraft:
    """Topic clusters of a day's notes: notes sharing a salient term go together.

    Notes are taken in id order and join the cluster whose terms they share most; notes that
    share nothing, and clusters past the seventh, go to one "Other conversations" cluster.
    """
    notes = sorted(payload.notes, key=lambda note: note.id)
    groups: list[tuple[list[NoteView], Counter[str], dict[str, str]]] = []
    for note in notes:
        phrases: dict[str, str] = {}
        for term in _note_terms(note)[:5]:
            phrases.setdefault(term.key, term.display)
            for key, display in term.aliases:
                phrases.setdefault(key, display)
        keys = set(phrases)
        best: tuple[int, int] | None = None
        for index, (_, counter, _) in enumerate(groups):
            shared = len(keys & set(counter))
            if shared and (best is None or shared > best[0]):
                best = (shared, index)
        if best is None:
            groups.append(([], Counter(), {}))
            target = groups[-1]
        else:
            target = groups[best[1]]
        target[0].append(note)
        for key, display in phrases.items():
            target[1][key] += 1
            target[2].setdefault(key, display)
    # A cluster of one note only repeats that note: two or more such notes share an "Other
    # conversations" cluster instead.
    shared_groups = [group for group in groups if len(group[0]) > 1]
    singles = sorted((g[0][0] for g in groups if len(g[0]) == 1), key=lambda note: note.id)
    if len(singles) == 1:
        shared_groups.append(([singles[0]], Counter(), {}))
        singles = []
    shared_groups.sort(key=lambda group: (-len(group[0]), group[0][0].id))
    groups = shared_groups[:7]
    rest = [note for group in shared_groups[7:] for note in group[0]] + singles
    if rest:
        groups.append((sorted(rest, key=lambda note: note.id), Counter(), {}))
    clusters = [_draft_cluster(members, counter, displays) for members, counter, displays in groups]
    return ClusterDraft(clusters=clusters)


def _draft_cluster(
    members: Sequence[NoteView], counter: Counter[str], displays: dict[str, str]
) -> DraftCluster:
    """One cluster's title and extractive summary.

    The title names up to two phrases its notes share, longest first, skipping any whose
    words an earlier one already covers ("Elden Ring", not "Elden Ring and Elden").
    """
    shared: list[str] = []
    covered: set[str] = set()
    ranked = sorted(
        (key for key in counter if counter[key] > 1),
        key=lambda key: (-counter[key], -len(key.split())),
    )
    for key in ranked:
        if len(shared) == 2:
            break
        if not set(key.split()) <= covered:
            shared.append(displays[key])
            covered |= set(key.split())
    if len(members) == 1:
        title = members[0].title
    elif shared:
        title = capitalise(" and ".join(shared))
    else:
        title = "Other conversations"
    people = unique(name for note in members for name in note.participants)
    listing = "; ".join(f"{clip(note.title, 80)} ({note.date})" for note in members)
    topic = f" about {join_words(shared)}" if shared else ""
    count = f"{len(members)} conversation{'s' if len(members) != 1 else ''}"
    summary = f"{OFFLINE_LABEL} {count}{topic}: {listing}."
    if people:
        summary += f" Participants: {name_list(people, limit=8)}."
    return DraftCluster(
        title=clip(title, 80) or "Conversation",
        summary=clip(summary, 1200),
        source_note_ids=[note.id for note in members][:100],
    )
