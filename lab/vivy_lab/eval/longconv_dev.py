"""The real long-conversation dev set (``../shared/data/longconv-dev/``) as Vivy sees it.

The set is half of a public benchmark of long real conversations between two people, with
questions whose answers cite the messages that hold them (its README describes the format).
It is read from ``../shared/`` at eval time and never copied into the repository or the
wheel. :func:`load_dev` turns it into the :class:`~vivy_lab.eval.longconv_data.LongEval`
shape the long-conversation eval runs (one guild per conversation, one channel, a session
per conversation day, each session's summary as the note a good model would write), and
:func:`write_exports` writes the same messages as DiscordChatExporter exports, so that the
embedded default can be measured through ``vivy import`` exactly as an operator runs it.

Messages are a minute apart within a session (a session is one conversation, well under the
buffer's two hours); a shared photo's caption is added to its message's text as
``[photo: caption]``, for Vivy and the baselines alike. Questions of category 5
(adversarial: never answered in the chat) are left out of recall; they are kept apart as
:attr:`DevSet.unanswerable` for the gate's measurement. Malformed evidence ids
(``D:11:26``, ``D30:05``) are normalised to ``D<session>:<turn>``; evidence that names no
message of the conversation is dropped and counted (:attr:`DevSet.dropped_evidence`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vivy_lab.eval.longconv import Searched
from vivy_lab.eval.longconv_data import LongEval, LongGuild, LongQuestion, LongSession

__all__ = [
    "CATEGORY_KINDS",
    "DEFAULT_DEV_PATH",
    "RANDOM_QUESTIONS",
    "DevRun",
    "DevSet",
    "load_dev",
    "message_sessions",
    "session_keys_of_notes",
    "snowflake",
    "strangers",
    "write_exports",
]

#: Where the dev set lies, from the repository's root.
DEFAULT_DEV_PATH = Path("../shared/data/longconv-dev/conversations.json")
#: The benchmark's question categories, by the names the eval reports.
CATEGORY_KINDS: Mapping[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
}
#: Seconds between two messages of one session.
MESSAGE_GAP_S = 60.0
#: Discord's epoch (2015-01-01) in milliseconds since 1970.
_DISCORD_EPOCH_MS = 1_420_070_400_000
_GUILD_BASE = 871_000_000_000_000_000
_CHANNEL_BASE = 872_000_000_000_000_000
_USER_BASE = 873_000_000_000_000_000
_SESSION_KEY = re.compile(r"^session_(\d+)$")
_EVIDENCE = re.compile(r"^D:?(\d+):0*(\d+)$")


def snowflake(at: float, sequence: int) -> int:
    """A Discord id made at ``at`` (epoch seconds), ``sequence`` in its low bits."""
    return ((int(at * 1000) - _DISCORD_EPOCH_MS) << 22) | (sequence & 0x3FFFFF)


def _session_time(text: str) -> float:
    """``1:56 pm on 8 May, 2023`` as epoch seconds (UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC).timestamp()


def _evidence_id(raw: str) -> str | None:
    """``D<session>:<turn>`` of an evidence id, malformed ones normalised; None if unreadable."""
    found = _EVIDENCE.match(raw.strip())
    return None if found is None else f"D{int(found[1])}:{int(found[2])}"


@dataclass(frozen=True, slots=True)
class DevSet:
    """The dev set as eval guilds, with what the eval needs beside them.

    ``observations`` holds, per session key, each member's facts with the message they came
    from (what a good model would add to the member's profile); ``unanswerable`` the
    adversarial questions (asked like the others, answered by nothing in the chat);
    ``names`` the guilds' and channels' names.
    """

    data: LongEval
    observations: Mapping[str, tuple[tuple[int, str, int], ...]]
    unanswerable: tuple[LongQuestion, ...]
    dropped_evidence: int
    guild_names: Mapping[int, str]


def load_dev(path: str | Path = DEFAULT_DEV_PATH) -> DevSet:
    """The dev set at ``path`` (see the module docstring)."""
    raw: list[dict[str, Any]] = json.loads(Path(path).read_text(encoding="utf-8"))
    guilds: list[LongGuild] = []
    observations: dict[str, tuple[tuple[int, str, int], ...]] = {}
    unanswerable: list[LongQuestion] = []
    names: dict[int, str] = {}
    dropped = 0
    for index, sample in enumerate(raw):
        guild, facts, hard, lost = _sample(index, sample)
        guilds.append(guild)
        observations.update(facts)
        unanswerable.extend(hard)
        names[guild.guild_id] = str(sample["sample_id"])
        dropped += lost
    return DevSet(LongEval(tuple(guilds)), observations, tuple(unanswerable), dropped, names)


def _sample(
    index: int, sample: Mapping[str, Any]
) -> tuple[LongGuild, dict[str, tuple[tuple[int, str, int], ...]], list[LongQuestion], int]:
    """One conversation as a guild, its observations, its adversarial questions, and how many
    evidence ids it drops."""
    conversation: Mapping[str, Any] = sample["conversation"]
    sample_id = str(sample["sample_id"])
    speakers = [str(conversation["speaker_a"]), str(conversation["speaker_b"])]
    users = {name: _USER_BASE + index * 10 + n for n, name in enumerate(speakers)}
    numbers = sorted(
        int(matched[1]) for key in conversation if (matched := _SESSION_KEY.match(key)) is not None
    )
    sessions: list[LongSession] = []
    message_of: dict[str, int] = {}
    summaries: Mapping[str, Any] = sample.get("session_summary", {})
    sequence = index * 100_000  # unique across conversations whose sessions share a time
    for number in numbers:
        start = _session_time(str(conversation[f"session_{number}_date_time"]))
        messages: list[tuple[int, int, float, str]] = []
        for turn, line in enumerate(conversation[f"session_{number}"]):
            speaker = str(line["speaker"])
            if speaker not in users:
                users[speaker] = _USER_BASE + index * 10 + len(users)
            at = start + turn * MESSAGE_GAP_S
            sequence += 1
            mid = snowflake(at, sequence)
            text = str(line["text"])
            caption = line.get("blip_caption")
            if caption:
                text = f"{text} [photo: {caption}]"
            messages.append((mid, users[speaker], at, text))
            key = _evidence_id(str(line["dia_id"]))
            if key is not None:
                message_of[key] = mid
        if not messages:
            continue
        summary = str(summaries.get(f"session_{number}_summary", ""))
        sessions.append(
            LongSession(
                key=f"{sample_id}/S{number}",
                start=start,
                end=messages[-1][2],
                note={"title": f"{' and '.join(speakers)}, session {number}", "summary": summary},
                messages=tuple(messages),
            )
        )
    asked_at = max(s.end for s in sessions) + 86400.0
    questions: list[LongQuestion] = []
    hard: list[LongQuestion] = []
    dropped = 0
    for number, qa in enumerate(sample["qa"]):
        category = int(qa["category"])
        answers: list[int] = []
        for raw_id in qa.get("evidence", ()):
            key = _evidence_id(str(raw_id))
            if key is None or key not in message_of:
                dropped += 1
                continue
            answers.append(message_of[key])
        question = LongQuestion(
            id=f"{sample_id}/q{number}",
            kind=CATEGORY_KINDS.get(category, "adversarial"),
            question=str(qa["question"]),
            asked_by=users[speakers[number % 2]],
            asked_at=asked_at,
            answers=tuple(dict.fromkeys(answers)),
        )
        if category in CATEGORY_KINDS:
            if question.answers:
                questions.append(question)
        else:
            hard.append(question)
    facts: dict[str, tuple[tuple[int, str, int], ...]] = {}
    observed: Mapping[str, Any] = sample.get("observation", {})
    for number in numbers:
        found: list[tuple[int, str, int]] = []
        for speaker, pairs in observed.get(f"session_{number}_observation", {}).items():
            for pair in pairs:
                fact, source = str(pair[0]), pair[1]
                key = _evidence_id(str(source[0] if isinstance(source, list) else source))
                if speaker in users and key in message_of:
                    found.append((users[speaker], fact, message_of[key]))
        facts[f"{sample_id}/S{number}"] = tuple(found)
    guild = LongGuild(
        guild_id=_GUILD_BASE + index,
        channel_id=_CHANNEL_BASE + index,
        channel_name="chat",
        members={user: (name, ()) for name, user in users.items()},
        sessions=tuple(sessions),
        questions=tuple(questions),
    )
    return guild, facts, hard, dropped


def message_sessions(data: LongEval) -> dict[int, str]:
    """Every message id of ``data``, with the key of its session."""
    return {
        mid: session.key
        for guild in data.guilds
        for session in guild.sessions
        for mid, _, _, _ in session.messages
    }


def write_exports(dev: DevSet, folder: Path) -> list[Path]:
    """Each guild's messages as one DiscordChatExporter export in ``folder``; their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for guild in dev.data.guilds:
        names = {user: name for user, (name, _) in guild.members.items()}
        export = {
            "guild": {"id": str(guild.guild_id), "name": dev.guild_names[guild.guild_id]},
            "channel": {"id": str(guild.channel_id), "type": "GuildTextChat", "name": "chat"},
            "messages": [
                _export_message(mid, author, names[author], at, text)
                for session in guild.sessions
                for mid, author, at, text in session.messages
            ],
        }
        path = folder / f"{dev.guild_names[guild.guild_id]}.json"
        path.write_text(json.dumps(export), encoding="utf-8")
        paths.append(path)
    return paths


def _export_message(mid: int, author: int, name: str, at: float, text: str) -> dict[str, Any]:
    """One message as DiscordChatExporter writes it (the fields Vivy reads)."""
    return {
        "id": str(mid),
        "type": "Default",
        "timestamp": datetime.fromtimestamp(at, UTC).isoformat(),
        "timestampEdited": None,
        "content": text,
        "author": {"id": str(author), "name": name.lower(), "nickname": name, "isBot": False},
        "mentions": [],
    }


def session_keys_of_notes(note_lines: Sequence[tuple[int, int]], data: LongEval) -> dict[int, str]:
    """Each note's session, from its evidence ``(note id, message id)`` pairs: the session
    most of its messages came from."""
    sessions = message_sessions(data)
    votes: dict[int, dict[str, int]] = {}
    for note_id, message_id in note_lines:
        key = sessions.get(message_id)
        if key is not None:
            counts = votes.setdefault(note_id, {})
            counts[key] = counts.get(key, 0) + 1
    return {note: max(counts, key=lambda k: counts[k]) for note, counts in votes.items()}


#: Random-word questions asked in every guild: memory holds nothing about them.
RANDOM_QUESTIONS: tuple[str, ...] = (
    "zzzqqq xylophone",
    "what did the committee decide about quarterly tax filings for the warehouse",
    "who fixed the carburetor on the lawnmower",
    "did anyone try the new sushi place downtown",
    "how much does a kilogram of saffron cost",
    "what is the wifi password for the office",
    "recommend a good wrench for plumbing",
    "when is the chess tournament final",
)


def strangers(dev: DevSet) -> LongEval:
    """Each guild asked the next guild's questions and :data:`RANDOM_QUESTIONS`: questions
    its memory holds no answer to."""
    guilds = dev.data.guilds
    asked: list[LongGuild] = []
    for index, guild in enumerate(guilds):
        other = guilds[(index + 1) % len(guilds)]
        when = guild.questions[0].asked_at if guild.questions else 0.0
        questions = [
            LongQuestion(f"stranger-{q.id}", "stranger", q.question, q.asked_by, when, ())
            for q in other.questions
        ]
        questions += [
            LongQuestion(f"random-{guild.guild_id}-{n}", "random", text, 0, when, ())
            for n, text in enumerate(RANDOM_QUESTIONS)
        ]
        asked.append(
            LongGuild(
                guild.guild_id,
                guild.channel_id,
                guild.channel_name,
                guild.members,
                guild.sessions,
                tuple(questions),
            )
        )
    return LongEval(tuple(asked))


@dataclass(frozen=True, slots=True)
class DevRun:
    """One way of writing the dev set's memory, and what its questions found.

    ``searched`` are the answerable questions' searches, ``strangers`` those of questions the
    guild's memory cannot answer (:func:`strangers`), ``bm25`` each answerable question's
    sessions by plain BM25 over the raw sessions (``bm25_raw``: a session by its best
    window; ``bm25_session``: whole sessions), and ``import_s`` how long writing the memory
    took (the import's wall time, for the embedded default).
    """

    name: str
    searched: tuple[Searched, ...]
    strangers: tuple[Searched, ...]
    bm25: Mapping[str, tuple[tuple[str, ...], ...]]
    messages: int
    import_s: float | None
