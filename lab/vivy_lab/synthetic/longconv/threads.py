"""A member's life thread and its beats, and the picker the thread kinds draw their details
with (the kinds are in :mod:`.home`, :mod:`.work` and :mod:`.leisure`, listed in
:mod:`.kinds`)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Beat:
    """One step of a thread, said in one session: its lines and how the note sums it up."""

    title: str
    generic: str
    detail: str
    lines: list[str]
    decision: str = ""
    open_question: str = ""


@dataclass
class Thread:
    """A life thread of one member: beats in order, and the questions its facts answer.

    ``asks`` maps a fact tag to single-hop phrasings; ``when`` a tag to the event (base verb
    phrase) a temporal "when" question asks about; ``events`` a tag to its past-tense phrase
    for "which came first"; ``bridges`` and ``opens`` list (tags, phrasings) for multi-hop and
    open-domain questions; ``worry`` the tags where the owner worries; ``mentions`` distractor
    remarks said in sessions after beat ``mentions_after``; ``about`` how a question names the
    thread; ``names`` the parameters that are named entities. A phrasing starting with ``~``
    is one in other words than the chat's, picked ``text.PARAPHRASE_SHARE`` of the time.
    """

    kind: str
    topic: str
    about: str
    p: dict[str, str]
    beats: list[Beat]
    asks: dict[str, list[str]]
    when: dict[str, list[str]] = field(default_factory=dict)
    events: dict[str, str] = field(default_factory=dict)
    bridges: list[tuple[list[str], list[str]]] = field(default_factory=list)
    opens: list[tuple[list[str], list[str]]] = field(default_factory=list)
    worry: list[str] = field(default_factory=list)
    mentions: list[str] = field(default_factory=list)
    mentions_after: int = 0
    names: list[str] = field(default_factory=list)


class Picker:
    """Random choices for one guild that never hand out the same named item twice."""

    def __init__(self, r: random.Random) -> None:
        self.r = r
        self.used: list[str] = []

    def __call__(self, pool: list[Any]) -> Any:
        """A random item of ``pool`` not handed out before (if any is left)."""
        fresh = [x for x in pool if str(x) not in self.used] or pool
        item = self.r.choice(fresh)
        self.used.append(str(item))
        return item
