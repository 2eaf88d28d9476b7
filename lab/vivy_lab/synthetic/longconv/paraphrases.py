"""The questions of the paraphrase kind: a fact asked in words none of which, after porter
stemming, was said in the answer message or near it."""

from __future__ import annotations

import random
import sqlite3
from datetime import datetime, timedelta
from typing import Any

from vivy_lab.synthetic.longconv.kinds import REPHRASE
from vivy_lab.synthetic.longconv.plan import Guild
from vivy_lab.synthetic.longconv.text import fill, first_upper, iso

#: Words that carry no content: a paraphrase may share these with what was said.
FUNCTION_WORDS = frozenset(
    "a an the and or but so to of in on at for with from by as into about is are was were be been "
    "being am do does did done have has had i me my you your he him his she her it its we us our "
    "they them their this that these those what which who whom whose when where why how if then "
    "than not no s t d ll m re ve".split()
)
#: Messages either side of an answer that a paraphrase must share no content word with either
#: (an evidence window holds four consecutive messages).
PARAPHRASE_REACH = 3


class Stems:
    """Content words as the retriever's keyword index sees them: SQLite's FTS5 with the porter
    stemmer ("working" and "works" are "work"), function words left out."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute(
            "CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')"
        )
        self.db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
        self.function = self.of(" ".join(sorted(FUNCTION_WORDS)), everything=True)

    def of(self, text: str, *, everything: bool = False) -> set[str]:
        """The stems of ``text``'s words (without function words unless ``everything``)."""
        self.db.execute("DELETE FROM t")
        self.db.execute("INSERT INTO t (x) VALUES (?)", (text,))
        found = {str(row[0]) for row in self.db.execute("SELECT term FROM v")}
        return found if everything else found - self.function


def paraphrase_shared(stems: Stems, question: str, said: list[str]) -> set[str]:
    """The content stems ``question`` shares with the texts ``said``."""
    return stems.of(question) & stems.of("\n".join(said))


def make_paraphrases(
    w: Guild, sessions: list[dict[str, Any]], last_end: datetime, seed: int, quota: int
) -> list[dict[str, Any]]:
    """Questions of the paraphrase kind: one per fact that some phrasing of :data:`REPHRASE`
    can ask without a content word of the answer message or its neighbours, sampled down to
    ``quota``. Its own random stream, so the other kinds' questions stay as they were."""
    r = random.Random(f"longconv-paraphrase:{seed}:{w.g}")
    stems = Stems()
    near: dict[str, list[str]] = {}
    for session in sessions:
        texts = [m["text"] for m in session["messages"]]
        for i, m in enumerate(session["messages"]):
            near[m["id"]] = texts[max(0, i - PARAPHRASE_REACH) : i + PARAPHRASE_REACH + 1]
    found: list[dict[str, Any]] = []
    for ti, t in enumerate(w.threads):
        o = w.owners[ti]
        for tag, phrasings in REPHRASE.get(t.kind, {}).items():
            said = w.facts.get((ti, tag))
            if said is None:
                continue
            for phrasing in r.sample(phrasings, len(phrasings)):
                text = first_upper(fill(phrasing, {**t.p, **w.members[o].ctx(r)}))
                if not paraphrase_shared(stems, text, near[said.msg_id]):
                    others = [i for i in range(len(w.members)) if i != o]
                    at = (last_end + timedelta(days=r.randint(1, 14))).replace(
                        hour=r.randint(9, 22), minute=r.randint(0, 59), second=0
                    )
                    found.append(
                        {
                            "kind": "paraphrase",
                            "question": text,
                            "asked_by": w.members[r.choice(others)].user_id,
                            "asked_at": iso(at),
                            "answer_message_ids": [said.msg_id],
                        }
                    )
                    break
    return r.sample(found, min(quota, len(found)))
