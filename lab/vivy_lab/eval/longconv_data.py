"""The long-conversation eval set as values: guilds of sessions and questions, and its loader.

The set (``lab/vivy_lab/data/longconv_eval.json``) is described in
``lab/vivy_lab/data/README.md`` and made by ``scripts/build_longconv_eval.py``;
:mod:`vivy_lab.eval.longconv` runs it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from vivy.clock import parse_utc

__all__ = ["LongEval", "LongGuild", "LongQuestion", "LongSession", "load_longconv"]


@dataclass(frozen=True, slots=True)
class LongSession:
    """One conversation: its ideal note and its messages ``(id, author id, time, text)``."""

    key: str
    start: float
    end: float
    note: Mapping[str, Any]
    messages: tuple[tuple[int, int, float, str], ...]


@dataclass(frozen=True, slots=True)
class LongQuestion:
    """A member's question, when and by whom it is asked, and the messages answering it."""

    id: str
    kind: str
    question: str
    asked_by: int
    asked_at: float
    answers: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class LongGuild:
    """One guild of the eval: its channel, members (name and aliases) and conversations."""

    guild_id: int
    channel_id: int
    channel_name: str
    members: Mapping[int, tuple[str, tuple[str, ...]]]
    sessions: tuple[LongSession, ...]
    questions: tuple[LongQuestion, ...]


@dataclass(frozen=True, slots=True)
class LongEval:
    """The guilds of a long-conversation eval set."""

    guilds: tuple[LongGuild, ...]


def _guild(raw: Mapping[str, Any]) -> LongGuild:
    members = {
        int(m["user_id"]): (str(m["name"]), tuple(str(a) for a in m.get("aliases", ())))
        for m in raw["members"]
    }
    sessions = tuple(
        LongSession(
            key=str(s["key"]),
            start=parse_utc(str(s["start"])),
            end=parse_utc(str(s["end"])),
            note=dict(s["note"]),
            messages=tuple(
                (int(m["id"]), int(m["author"]), parse_utc(str(m["time"])), str(m["text"]))
                for m in s["messages"]
            ),
        )
        for s in raw["sessions"]
    )
    questions = tuple(
        LongQuestion(
            id=str(q["id"]),
            kind=str(q["kind"]),
            question=str(q["question"]),
            asked_by=int(q["asked_by"]),
            asked_at=parse_utc(str(q["asked_at"])),
            answers=tuple(int(i) for i in q["answer_message_ids"]),
        )
        for q in raw["questions"]
    )
    channel = raw["channel"]
    return LongGuild(
        int(raw["guild_id"]), int(channel["id"]), str(channel["name"]), members, sessions, questions
    )


def load_longconv(path: str | Path | None = None) -> LongEval:
    """The eval set at ``path``, or the bundled one."""
    if path is None:
        text = (
            resources.files("vivy_lab.data")
            .joinpath("longconv_eval.json")
            .read_text(encoding="utf-8")
        )
    else:
        text = Path(path).read_text(encoding="utf-8")
    raw: dict[str, Any] = json.loads(text)
    return LongEval(tuple(_guild(g) for g in raw["guilds"]))
