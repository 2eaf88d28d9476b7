"""``vivy bench llm-cost``: LLM calls and tokens per 1,000 human messages.

Three replays go through the whole pipeline — buffers, notes, profile updates, the nightly
clustering and consolidation — with a counting stand-in model (:func:`stand_in`: the offline
provider, answering every note call with operations for every listed member), plus a token
estimate (4 characters a token) of every prompt and answer. The *dense* replay is the demo
export (or the exports given): three busy days. The *spaced* replay is a generated history
of two-member conversations days or weeks apart, how most small servers talk, where no
profile update can ride along with another. The *mature* replay is the spaced one again,
from profiles already at the caps (:mod:`vivy_lab.bench.mature`): the steady state of a
server whose regulars have said enough about themselves. Each prints calls and tokens per
operation, what became of profile facts (added, merged, folded, invalidated) and how many
participants its conversations had, against the note call's member cap. The dense replay is
also costed the way seed 000 specifies per-message extraction: one extraction call per human
message of 10 or more characters, plus one consolidation call per similar existing fact
(cosine distance below 0.35, at most 3) of every extracted fact, plus one embedding per fact.
Targets: at most 100 generation calls per 1,000 messages on the dense replay; on the spaced
and the mature ones at most 60, and at most 120,000 input tokens.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import tempfile
from collections import Counter, defaultdict
from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from vivy.commands.demo import DEMO_EXPORT
from vivy.config import Settings
from vivy.importer import ExportMessage, import_exports, load_exports
from vivy.llm.offline import OfflineLLM, profile_operations, shared_embedder
from vivy.llm.offline.text import clip
from vivy.llm.port import (
    ChatAnswer,
    ChatRequest,
    EmbeddingTask,
    Generation,
    GenerationRequest,
    Operation,
    T,
    Usage,
)
from vivy.llm.schemas import (
    AddFact,
    ConversationDraft,
    MemberOperations,
    NoteInput,
    NoteView,
    ProfileInput,
    ProfileOperations,
    TranscriptLine,
)
from vivy.memory.guards import discloses_self
from vivy.memory.notes import NoteType
from vivy.state.profile import NOTE_MEMBERS_CAP
from vivy.storage.sqlite.readonly import open_sqlite_readonly
from vivy_lab.bench.mature import seed_full_profiles

__all__ = [
    "CountingLLM",
    "format_results",
    "main",
    "per_message_cost",
    "run",
    "run_spaced",
    "spaced_export",
]


#: Seed 000's extraction prompt, for its token estimate.
SEED_EXTRACTION_PROMPT = (
    "Extract long-term, third-person facts about the user from this message.\n"
    "Ignore temporary states like current mood or what they're doing right now.\n"
    "If no long-term facts can be extracted, return an empty array.\n"
    "The user's name is {name}.\nMessage: {text}"
)
#: Seed 000's consolidation system prompt (abridged to its length class) for its estimate.
SEED_CONSOLIDATION_PROMPT = (
    "You are a memory consolidation AI. Your job is to compare a NEW fact with an OLD fact and"
    " decide how to update the database. Rules: 1. INVALIDATE: Use this if the new fact"
    " completely replaces or contradicts the old fact. 2. MERGE: Use this if the facts are"
    " about the exact same topic/entity and can be combined into a single, richer sentence."
    " 3. KEEP: Use this if the facts are completely unrelated. If you choose MERGE, you must"
    " provide the newly combined fact. NEW: {new} OLD: {old}"
)
SIMILARITY_DISTANCE = 0.35


def tokens(text: str) -> int:
    """A rough token count: four characters a token."""
    return max(1, math.ceil(len(text) / 4))


#: First-person words and their third-person forms, for the stand-in's facts.
_THIRD_PERSON = {
    "i": "they",
    "i'm": "they're",
    "im": "they're",
    "i've": "they've",
    "i'd": "they'd",
    "i'll": "they'll",
    "me": "them",
    "my": "their",
    "mine": "theirs",
}


#: Most words of a stand-in fact, from its first-person word on.
_FACT_WORDS = 7


def disclosed_fact(own_text: str, known: Collection[str]) -> str | None:
    """The first clause of ``own_text`` that discloses something about its author, as a
    third-person fact (its first-person word and up to six more) not among ``known``
    (compared word for word), if any."""
    taken = {" ".join(text.lower().split()) for text in known}
    for clause in re.split(r"[,.;:!?\n]+", own_text):
        words = clause.split()
        first = next((i for i, word in enumerate(words) if word.lower() in _THIRD_PERSON), None)
        if first is None or not discloses_self(clause):
            continue
        words = words[first : first + _FACT_WORDS]
        if len(words) < 3:
            continue
        fact = " ".join(_THIRD_PERSON.get(word.lower(), word) for word in words)
        fact = clip(fact[:1].upper() + fact[1:], 200)
        if " ".join(fact.lower().split()) not in taken:
            return fact
    return None


def _states_facts(user_id: int, lines: Sequence[TranscriptLine]) -> bool:
    """Whether the offline rules read a fact from the member's own ``lines`` (new or not)."""
    view = NoteView(0, "", "", "", (), tuple(lines))
    return bool(profile_operations(ProfileInput(user_id, "", (), (view,))).operations)


def stand_in(request: GenerationRequest[T], value: T) -> T:
    """The offline answer as a model that extracts something from everyone would give it.

    A note call gets an entry for every listed member, and each entry operations: the
    offline rules' ones, or, where the rules read no statement at all, the member's first
    self-disclosing clause as a new fact (what a model that always answers does). A profile
    update gets the same. So the replays' profiles grow and change as they would with such a
    model, instead of only when a sentence matches a rule. Other requests keep the offline
    answer.
    """
    payload = request.payload
    if isinstance(payload, NoteInput) and isinstance(value, ConversationDraft):
        given = {entry.user_id: entry for entry in value.profiles}
        entries: list[MemberOperations] = []
        for member in payload.members:
            entry = given.get(member.user_id, MemberOperations(user_id=member.user_id))
            own = "\n".join(line.text for line in payload.lines if line.author_id == member.user_id)
            fact = None
            if not entry.operations and not _states_facts(member.user_id, payload.lines):
                fact = disclosed_fact(own, [f.text for f in member.facts])
            if fact is not None:
                entry = MemberOperations(
                    user_id=member.user_id,
                    operations=[AddFact(op="add", section="other", text=fact)],
                )
            entries.append(entry)
        return cast(T, value.model_copy(update={"profiles": entries}))
    if (
        request.operation is Operation.PROFILE_UPDATE
        and isinstance(payload, ProfileInput)
        and isinstance(value, ProfileOperations)
    ):
        if value.operations:
            return value
        for note in payload.notes:
            if _states_facts(payload.user_id, note.lines):
                continue
            own = "\n".join(line.text for line in note.lines if line.author_id == payload.user_id)
            fact = disclosed_fact(own, [f.text for f in payload.facts])
            if fact is not None:
                add = AddFact(op="add", section="other", text=fact, note_id=note.id)
                return cast(T, ProfileOperations(operations=[add]))
    return value


class CountingLLM(OfflineLLM):
    """The offline provider as :func:`stand_in` describes, counting calls and estimated
    tokens by operation."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()
        self.tokens_in_by: Counter[str] = Counter()
        self.tokens_out_by: Counter[str] = Counter()
        self.embeddings = 0

    @property
    def tokens_in(self) -> int:
        """Estimated input tokens of every generation."""
        return sum(self.tokens_in_by.values())

    @property
    def tokens_out(self) -> int:
        """Estimated output tokens of every generation."""
        return sum(self.tokens_out_by.values())

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """Answer as :func:`stand_in` does; count the call and its estimated tokens."""
        answer = await super().generate(request)
        answer = replace(answer, value=stand_in(request, answer.value))
        dumped = getattr(answer.value, "model_dump_json", lambda: "")()
        usage = Usage(tokens(request.system + request.prompt), tokens(dumped))
        self.calls[request.operation.value] += 1
        self.tokens_in_by[request.operation.value] += usage.input_tokens
        self.tokens_out_by[request.operation.value] += usage.output_tokens
        return replace(answer, usage=usage)

    async def embed(self, texts: Sequence[str], task: EmbeddingTask) -> list[list[float]]:
        """Embed offline; count one embedding request per call."""
        self.embeddings += 1
        return await super().embed(texts, task)

    async def chat(self, request: ChatRequest) -> ChatAnswer:
        """Not used by the capture pipeline."""
        return await super().chat(request)


def per_message_cost(messages: Sequence[ExportMessage]) -> dict[str, int]:
    """Seed 000's per-message extraction cost on the same human messages."""
    facts: dict[int, list[tuple[str, list[float]]]] = defaultdict(list)
    calls = tokens_in = tokens_out = embeddings = 0
    for message in messages:
        if message.author_is_bot or len(message.content) < 10:
            continue
        calls += 1
        tokens_in += tokens(
            SEED_EXTRACTION_PROMPT.format(name=message.author_name, text=message.content)
        )
        line = TranscriptLine(
            message.author_id, message.author_name, message.content, message.timestamp
        )
        note = NoteView(0, "", "", "", (message.author_name,), (line,))
        extracted = [
            op.text
            for op in profile_operations(
                ProfileInput(message.author_id, message.author_name, (), (note,))
            ).operations
            if isinstance(op, AddFact)
        ]
        tokens_out += tokens(json.dumps(extracted))
        for text in extracted:
            embeddings += 1
            vector = shared_embedder().embed([text])[0]
            similar = sorted(
                (1 - sum(a * b for a, b in zip(vector, old, strict=True)), old_text)
                for old_text, old in facts[message.author_id]
            )
            for _, old_text in [s for s in similar if s[0] < SIMILARITY_DISTANCE][:3]:
                calls += 1
                tokens_in += tokens(SEED_CONSOLIDATION_PROMPT.format(new=text, old=old_text))
                tokens_out += tokens('{"action": "MERGE", "merged_text": "' + text + '"}')
            facts[message.author_id].append((text, vector))
    return {"calls": calls, "tokens": tokens_in + tokens_out, "embeddings": embeddings}


#: The spaced history's members: display name, then what they may say about themselves
#: (the first statement of a slot in a conversation; later ones may change it).
SPACED_CAST: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Maya",
        (
            "I live in Austin",
            "I work as a nurse",
            "I love bouldering",
            "My dog is named Bento",
            "I moved to Denver last month",
            "I'm learning Japanese",
        ),
    ),
    (
        "Theo",
        (
            "I work at a bike shop",
            "I play the cello",
            "I'm vegetarian",
            "I live in Lisbon",
            "I prefer tea over coffee",
            "I main Zelda in Smash",
        ),
    ),
    (
        "Priya",
        (
            "I'm from Pune",
            "I study chemistry",
            "I love baking sourdough",
            "My cat is named Miso",
            "I mostly use Python",
            "I go climbing on weekends",
        ),
    ),
    (
        "Jonas",
        (
            "I live in Hamburg",
            "I work for a shipping company",
            "I hate horror movies",
            "I play chess online",
            "I'm learning the guitar",
            "I moved to Berlin in the spring",
        ),
    ),
)

#: Everyday lines of the spaced history, none of which states a lasting fact.
SPACED_CHATTER: tuple[str, ...] = (
    "hey, long time no see",
    "how was your week?",
    "pretty busy honestly, but good",
    "did you end up watching that documentary about octopuses",
    "yeah it was wild, they can taste with their arms",
    "no way, that is amazing",
    "the weather has been all over the place lately",
    "it rained the whole weekend here",
    "we should plan another game night soon",
    "sure, friday could work for me",
    "did anyone try the new update of the game?",
    "the patch notes were huge, they reworked the whole map",
    "i still need to finish the last chapter",
    "no spoilers please!",
    "haha fine, my lips are sealed",
    "what are you reading at the moment",
    "a sci-fi novel about a generation ship, slow but good",
    "sounds like my kind of book",
    "i made soup yesterday and it was way too salty",
    "add a potato, it soaks up the salt",
    "that is a myth i think, but worth a try",
    "anyway, how is the project going",
    "slowly, the deadline moved again",
    "classic. at least you get more time",
    "true, i will take it",
    "my weekend was mostly laundry and sleep",
    "honestly that sounds perfect",
    "did you see the photos from the trip",
    "yes! the mountain ones were gorgeous",
    "the hike up took us four hours",
    "ok i have to run, talk soon",
    "see you, take care",
    "lol same here, gotta go",
    "good night!",
)

#: The spaced history's guild and channel, and the first conversation's start (2025-01-06).
SPACED_GUILD = 881000000000000001
SPACED_CHANNEL = 882000000000000001
SPACED_START = 1_736_150_400.0


def _export_message(message_id: int, at: float, author: tuple[int, str], text: str) -> Any:
    """One message in the export format ``vivy import`` reads."""
    stamp = datetime.fromtimestamp(at, tz=UTC).isoformat(timespec="milliseconds")
    return {
        "id": str(message_id),
        "type": "Default",
        "timestamp": stamp,
        "timestampEdited": None,
        "content": text,
        "author": {
            "id": str(author[0]),
            "name": author[1].lower(),
            "nickname": author[1],
            "isBot": False,
        },
        "mentions": [],
    }


def spaced_export(*, conversations: int = 48, seed: int = 16) -> dict[str, Any]:
    """A generated export: two-member conversations days or weeks apart.

    Each conversation pairs two of :data:`SPACED_CAST`, runs 16 to 28 messages (one or two
    everyday sentences, about 70 characters) a minute or two apart, and now and then has a
    member state one of their facts; the next starts 2 to 21 days later. The same ``seed``
    gives the same export.
    """
    rng = random.Random(seed)
    cast = [(8_810_000 + index, name) for index, (name, _) in enumerate(SPACED_CAST)]
    said: dict[int, int] = dict.fromkeys(range(len(cast)), 0)
    messages: list[Any] = []
    at = SPACED_START
    message_id = 1_300_000_000_000_000_000
    for _ in range(conversations):
        pair = rng.sample(range(len(cast)), 2)
        length = rng.randint(16, 28)
        disclosures = {rng.randrange(length): member for member in pair if rng.random() < 0.55}
        start = at + rng.randint(17, 22) * 3600.0
        for index in range(length):
            speaker = pair[index % 2]
            text = rng.choice(SPACED_CHATTER)
            if rng.random() < 0.6:
                text += " " + rng.choice(SPACED_CHATTER)
            member = disclosures.get(index)
            if member is not None:
                facts = SPACED_CAST[member][1]
                speaker = member
                text = f"{facts[said[member] % len(facts)]}, by the way"
                said[member] += 1
            start += rng.randint(40, 150)
            message_id += rng.randint(1, 5000) << 22
            messages.append(_export_message(message_id, start, cast[speaker], text))
        at += rng.randint(2, 21) * 86400.0
    return {
        "guild": {"id": str(SPACED_GUILD), "name": "Slow Lane"},
        "channel": {"id": str(SPACED_CHANNEL), "type": "GuildTextChat", "name": "general"},
        "messages": messages,
    }


#: The generation calls of the capture pipeline, printed even when a replay makes none.
GENERATIONS = tuple(
    op.value
    for op in (
        Operation.NOTE,
        Operation.PROFILE_UPDATE,
        Operation.PROFILE_CONSOLIDATION,
        Operation.TOPIC_CLUSTER,
    )
)

#: A figure of the results: a count, a rate, or a distribution written out.
Figure = int | float | str


def _replay_facts(database: Path, since: float) -> tuple[Counter[str], Counter[int]]:
    """What happened to profile facts from ``since`` on (added, folded, merged, invalidated),
    and how many conversations had how many participants, read back from the database."""
    churn: Counter[str] = Counter()
    sizes: Counter[int] = Counter()
    with open_sqlite_readonly(database) as store:
        for guild_id in store.guild_ids():
            notes = store.list_notes(guild_id, note_type=NoteType.CONVERSATION, limit=1_000_000)
            sizes.update(len(note.participants) for note in notes)
            for user_id, _ in store.guild_members(guild_id):
                for fact in store.profile_records(guild_id, user_id, include_invalidated=True):
                    if fact.created_at >= since:
                        churn["added"] += 1
                    if fact.invalidated_at is None or fact.invalidated_at < since:
                        continue
                    reason = fact.invalidation_reason or ""
                    kind = reason.split(":")[0] if reason.startswith(("folded", "merged")) else ""
                    churn[kind or "invalidated"] += 1
    return churn, sizes


def run(
    paths: Sequence[Path], *, seed_cost: bool = True, full_profiles: bool = False
) -> dict[str, Figure]:
    """Replay ``paths`` through the pipeline and report calls and tokens per operation.

    With ``seed_cost``, the same messages are also costed as seed 000's per-message design.
    With ``full_profiles``, every author starts with a profile at the caps
    (:func:`~vivy_lab.bench.mature.seed_full_profiles`).
    """
    batch = load_exports(paths)
    humans = [m for m in batch.messages if not m.author_is_bot and m.content.strip()]
    first = min(m.timestamp for m in batch.messages)
    llm = CountingLLM()
    with tempfile.TemporaryDirectory() as tmp:
        database = Path(tmp) / "cost.db"
        if full_profiles:
            authors = sorted({m.author_id for m in humans})
            seed_full_profiles(database, batch.messages[0].guild_id, authors, before=first)
        import_exports(paths, replace(Settings(), database=database), llm=llm)
        churn, sizes = _replay_facts(database, first)
    calls = sum(llm.calls.values())
    per_k = 1000 / len(humans)
    results: dict[str, Figure] = {
        "human_messages": len(humans),
        "llm_calls": calls,
        "llm_calls_per_1000_messages": round(calls * per_k, 1),
        "tokens_in_per_1000_messages": round(llm.tokens_in * per_k),
        "tokens_out_per_1000_messages": round(llm.tokens_out * per_k),
        "tokens_per_1000_messages": round((llm.tokens_in + llm.tokens_out) * per_k),
        "embedding_requests_per_1000_messages": round(llm.embeddings * per_k, 1),
    }
    for operation in sorted({*GENERATIONS, *llm.calls}):
        count = llm.calls[operation]
        results[f"calls_{operation}"] = count
        results[f"calls_{operation}_per_1000_messages"] = round(count * per_k, 1)
        results[f"tokens_in_{operation}_per_1000_messages"] = round(
            llm.tokens_in_by[operation] * per_k
        )
        results[f"tokens_out_{operation}_per_1000_messages"] = round(
            llm.tokens_out_by[operation] * per_k
        )
    for kind in ("added", "merged", "folded", "invalidated"):
        results[f"facts_{kind}_per_1000_messages"] = round(churn[kind] * per_k, 1)
    results["participants_per_conversation"] = " ".join(
        f"{size}:{count}" for size, count in sorted(sizes.items())
    )
    results["conversations_over_member_cap"] = sum(
        count for size, count in sizes.items() if size > NOTE_MEMBERS_CAP
    )
    if seed_cost:
        seed = per_message_cost(batch.messages)
        results.update(
            {
                "per_message_llm_calls": seed["calls"],
                "per_message_llm_calls_per_1000_messages": round(seed["calls"] * per_k, 1),
                "per_message_tokens_per_1000_messages": round(seed["tokens"] * per_k),
                "per_message_embeddings_per_1000_messages": round(seed["embeddings"] * per_k, 1),
            }
        )
    return results


def run_spaced(
    *, conversations: int = 48, seed: int = 16, full_profiles: bool = False
) -> dict[str, Figure]:
    """Generate the spaced history and replay it (see :func:`spaced_export`); with
    ``full_profiles``, from profiles at the caps (the mature replay)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spaced.json"
        export = spaced_export(conversations=conversations, seed=seed)
        path.write_text(json.dumps(export), encoding="utf-8")
        return run([path], seed_cost=False, full_profiles=full_profiles)


def format_results(name: str, results: dict[str, Figure]) -> list[str]:
    """``name.figure: value`` lines, integers without a decimal point."""
    return [
        f"{name}.{figure}: {value:g}" if isinstance(value, float) else f"{name}.{figure}: {value}"
        for figure, value in results.items()
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Print the three replays' figures, one ``name: value`` a line."""
    parser = argparse.ArgumentParser(
        prog="vivy bench llm-cost",
        description="Count LLM calls, tokens and fact changes per 1,000 human messages over "
        "three offline replays (dense, spaced, mature).",
    )
    parser.add_argument("paths", nargs="*", type=Path, help="exports (default: the bundled one)")
    parser.add_argument(
        "--conversations",
        type=int,
        default=48,
        help="conversations in the generated spaced history (default: 48, ~1,050 messages)",
    )
    args = parser.parse_args(argv)
    print(f"note_members_cap: {NOTE_MEMBERS_CAP}", flush=True)
    for line in format_results("dense", run(args.paths or [DEMO_EXPORT])):
        print(line, flush=True)
    for line in format_results("spaced", run_spaced(conversations=args.conversations)):
        print(line, flush=True)
    mature = run_spaced(conversations=args.conversations, full_profiles=True)
    for line in format_results("mature", mature):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
