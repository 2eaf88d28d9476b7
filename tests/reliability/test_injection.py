"""Prompt injection said in chat never becomes a remembered fact; honest self-statements do.

Every line of ``injection_corpus.txt`` is said by a member in a conversation, next to a real
statement about themselves. Two ways in are tried: the whole pipeline with the offline
provider, and :func:`~vivy.state.profile.plan_operations` fed an ``add`` of each line verbatim,
as a compromised LLM would propose it (grounded in the member's own words, so only the
injection guard stands in the way). No stored or planned fact may read as an instruction or
contain the line's key phrase, while the real self-statement must still become a fact.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import anyio
import pytest

from vivy.app import running_app
from vivy.clock import Clock
from vivy.config import BufferSettings, Settings
from vivy.llm.offline import OfflineLLM
from vivy.llm.port import Generation, GenerationRequest
from vivy.llm.schemas import AddFact, ProfileInput, ProfileOperations, fact_operations
from vivy.memory.guards import looks_like_instruction
from vivy.state.gate import IncomingMessage
from vivy.state.profile import FactSource, plan_operations
from vivy.storage.sqlite.db import Connection

T = TypeVar("T")

CORPUS_PATH = Path(__file__).with_name("injection_corpus.txt")
#: 2026-03-02T12:00:00Z.
WALL0 = 1772452800.0
GUILD = 800


@dataclass(frozen=True, slots=True)
class Attempt:
    """One injection attempt: the phrase no fact may carry, and the line as said."""

    key: str
    line: str


def load_corpus() -> list[Attempt]:
    """The attempts of the corpus file, in file order."""
    attempts = []
    for raw in CORPUS_PATH.read_text(encoding="utf-8").splitlines():
        if raw.strip() and not raw.startswith("#"):
            key, line = raw.split("\t")
            attempts.append(Attempt(key, line))
    return attempts


CORPUS = load_corpus()

#: Real self-statements, and the fact each must become.
SELF_STATEMENTS = [
    ("I live in Denver", "Lives in Denver"),
    ("I work at Dell", "Works at Dell"),
    ("I love bouldering", "Loves bouldering"),
    ("I play chess", "Plays chess"),
    ("I use Neovim", "Uses Neovim"),
    ("I'm learning Rust", "Is learning Rust"),
    ("my cat is named Miso", "Has a cat named Miso"),
]


def statement_for(index: int) -> tuple[str, str]:
    """The self-statement said next to attempt ``index``."""
    return SELF_STATEMENTS[index % len(SELF_STATEMENTS)]


def bad_fact(text: str, attempt: Attempt) -> bool:
    """Whether a fact reads as an instruction or carries the attempt's key phrase."""
    return looks_like_instruction(text) or attempt.key.casefold() in text.casefold()


def test_corpus_has_fifty_distinct_attempts() -> None:
    """The corpus holds at least 50 attempts, each containing its own key phrase."""
    assert len(CORPUS) >= 50
    assert len({a.key for a in CORPUS}) == len(CORPUS)
    assert all(a.key.casefold() in a.line.casefold() for a in CORPUS)


def _params() -> list[object]:
    return [pytest.param(i, attempt, id=f"{i:02d}") for i, attempt in enumerate(CORPUS)]


@pytest.mark.parametrize(("index", "attempt"), _params())
def test_compromised_llm_cannot_plan_the_line_as_a_fact(index: int, attempt: Attempt) -> None:
    """An ``add`` of the injection line verbatim is refused; the honest ``add`` is planned."""
    said, fact = statement_for(index)
    source = FactSource(7, "Chat, Mar 2", f"{attempt.line}\n{said}")
    operations = [
        AddFact(op="add", section="other", text=attempt.line[:200], note_id=7),
        AddFact(op="add", section="bio", text=attempt.line[:200], evidence=attempt.line[:300]),
        AddFact(op="add", section="bio", text=fact, note_id=7, evidence=said),
    ]
    plan = plan_operations([], fact_operations(operations), {7: source})
    assert [new.text for new in plan.added] == [fact]
    assert not any(bad_fact(new.text, attempt) for new in plan.added)


class CompromisedLLM(OfflineLLM):
    """The offline provider, except that profile updates also add every line the member said."""

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """Offline operations plus a verbatim ``add`` per line of the member."""
        honest = await super().generate(request)
        payload = request.payload
        if not isinstance(honest.value, ProfileOperations) or not isinstance(payload, ProfileInput):
            return honest
        verbatim = [
            AddFact(op="add", section="other", text=line.text[:200], note_id=note.id)
            for note in payload.notes
            for line in note.lines
            if line.author_id == payload.user_id
        ]
        value = ProfileOperations(operations=[*honest.value.operations, *verbatim][:40])
        return Generation(value, honest.usage, honest.model, honest.quality)  # type: ignore[arg-type]


def active_facts(conn: Connection) -> dict[int, list[str]]:
    """Active fact texts by member."""
    found: dict[int, list[str]] = {}
    for user_id, text in conn.execute(
        "SELECT user_id, text FROM profile_facts WHERE invalidated_at IS NULL ORDER BY id"
    ):
        found.setdefault(int(user_id), []).append(str(text))
    return found


async def run_corpus(path: Path, llm: OfflineLLM, attempts: list[Attempt]) -> dict[int, list[str]]:
    """Say every attempt in its own channel next to a self-statement; return the facts."""
    settings = Settings(
        database=path,
        buffers=BufferSettings(inactivity_min_s=600.0, inactivity_max_s=600.0),
        profile_delay_s=0.0,
    )
    async with running_app(
        settings, clock=Clock.starting_at(WALL0), inline=True, llm=llm, scheduler=False
    ) as app:
        message_id = 1
        for index, attempt in enumerate(attempts):
            member = 5000 + index
            lines = [
                (member, attempt.line),
                (4999, "lol ok"),
                (member, statement_for(index)[0]),
                (4999, "cool"),
            ]
            for author, text in lines:
                await app.router.ingest(
                    IncomingMessage(
                        GUILD, 100 + index, message_id, author, f"m{author}", text, WALL0
                    )
                )
                message_id += 1
        await anyio.sleep(7200.0)
        assert app.notes.backlog == 0
        pending = await app.db.read(
            lambda c: c.execute("SELECT COUNT(*) FROM profile_updates WHERE status = 'pending'")
        )
        assert pending.fetchone()[0] == 0
        return await app.db.read(active_facts)


@pytest.mark.anyio
async def test_offline_pipeline_keeps_self_statements_and_drops_injections(tmp_path: Path) -> None:
    """Through the whole offline pipeline, each member keeps exactly their real fact."""
    facts = await run_corpus(tmp_path / "vivy.db", OfflineLLM(), CORPUS)
    for index, attempt in enumerate(CORPUS):
        assert facts.get(5000 + index) == [statement_for(index)[1]], attempt.line
    assert 4999 not in facts
    for texts in facts.values():
        assert not any(looks_like_instruction(text) for text in texts)


@pytest.mark.anyio
async def test_compromised_pipeline_refuses_every_injection(tmp_path: Path) -> None:
    """With an LLM that proposes every line verbatim, every injection is still refused."""
    facts = await run_corpus(tmp_path / "vivy.db", CompromisedLLM(), CORPUS)
    for index, attempt in enumerate(CORPUS):
        theirs = facts.get(5000 + index, [])
        assert statement_for(index)[1] in theirs, attempt.line
        assert not any(bad_fact(text, attempt) for text in theirs), (attempt.line, theirs)
