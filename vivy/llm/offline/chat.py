"""The offline chat reply: the remembered lines relevant to the last message, read back."""

from __future__ import annotations

import re

from vivy.llm.offline.text import content_words
from vivy.llm.port import ChatRequest

__all__ = ["offline_chat_answer"]

_TAG = re.compile(r"^\s*</?[A-Za-z_][\w-]*(?:\s[^>]*)?>\s*$")
_USER_TAG = re.compile(r'^\s*<user name="(?P<name>[^"]*)">\s*$')


def offline_chat_answer(request: ChatRequest, *, limit: int = 1800) -> str:
    """A deterministic reply that reads back the memory lines relevant to the last message.

    Lines of the ``<background_facts>`` block that share words with the latest user turn
    come first; without any overlap the first lines are shown. The reply says it is offline.
    """
    facts: list[str] = []
    person: str | None = None
    for raw in request.memory_context.splitlines():
        user = _USER_TAG.match(raw)
        if user:
            person = user["name"]
            continue
        if _TAG.match(raw):
            if raw.strip().startswith("</user"):
                person = None
            continue
        line = raw.strip()
        if not line.startswith("- "):
            continue
        body = line[2:].strip()
        facts.append(f"- {person}: {body}" if person else f"- {body}")
    if not facts:
        return (
            "(offline mode) I can't think things through right now, and I don't remember "
            "anything about this yet."
        )
    last = next((turn.text for turn in reversed(request.turns) if turn.role == "user"), "")
    query = content_words(last)
    scored = [(len(query & content_words(fact)), index) for index, fact in enumerate(facts)]
    relevant = [index for score, index in scored if score > 0]
    if relevant:
        ranked = sorted(relevant, key=lambda index: (-scored[index][0], index))[:8]
        chosen = sorted(ranked)
    else:
        chosen = list(range(min(8, len(facts))))
    text = "(offline mode) I can't think things through right now, but here is what I remember:"
    for index in chosen:
        candidate = f"{text}\n{facts[index]}"
        if len(candidate) > limit:
            break
        text = candidate
    return text
