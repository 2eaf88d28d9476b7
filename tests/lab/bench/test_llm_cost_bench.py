"""The LLM-cost benchmark: its spaced history, its stand-in model, its full profiles, and its
counting of calls, tokens and facts."""

from __future__ import annotations

import json
from collections import Counter
from itertools import pairwise
from pathlib import Path

import pytest

from tests.importer import TWO_DAYS
from vivy.importer import load_exports
from vivy.llm.prompts import note_request
from vivy.llm.schemas import ConversationDraft, MemberFacts, NoteInput, TranscriptLine
from vivy.memory.facts import PROFILE_SECTIONS
from vivy.state.profile import PROFILE_CAP, SECTION_CAP
from vivy_lab.bench.llm_cost import (
    CountingLLM,
    disclosed_fact,
    format_results,
    main,
    run_spaced,
    spaced_export,
)
from vivy_lab.bench.mature import full_profile


def test_spaced_history_is_two_member_conversations_days_apart(tmp_path: Path) -> None:
    """Over 1,000 messages, two authors a conversation, at least two days between them."""
    path = tmp_path / "spaced.json"
    path.write_text(json.dumps(spaced_export()), encoding="utf-8")
    messages = load_exports([path]).messages
    assert len(messages) >= 1000
    conversations: list[list[float]] = []
    authors: list[set[int]] = []
    for previous, message in zip((None, *messages), messages, strict=False):
        if previous is None or message.timestamp - previous.timestamp > 86_400:
            conversations.append([])
            authors.append(set())
        conversations[-1].append(message.timestamp)
        authors[-1].add(message.author_id)
    assert len(conversations) == 48
    assert all(len(people) == 2 for people in authors)
    gaps = [b[0] - a[-1] for a, b in pairwise(conversations)]
    assert min(gaps) > 86_400
    assert max(gaps) > 14 * 86_400


def test_spaced_history_is_the_same_for_the_same_seed() -> None:
    """The generated export depends on its seed only."""
    assert spaced_export(seed=3) == spaced_export(seed=3)
    assert spaced_export(seed=3) != spaced_export(seed=4)


@pytest.mark.anyio
async def test_counting_llm_keeps_tokens_per_operation() -> None:
    """Each generation is counted under its operation, with input and output estimates."""
    llm = CountingLLM()
    lines = (TranscriptLine(1, "Ann", "I live in Oslo", 0.0),)
    await llm.generate(note_request(NoteInput(1, 2, "general", lines)))
    await llm.generate(
        note_request(NoteInput(1, 2, "general", lines, (MemberFacts(1, "Ann", ()),)))
    )
    assert llm.calls == {"note": 2}
    assert llm.tokens_in == llm.tokens_in_by["note"] > 0
    assert llm.tokens_out == llm.tokens_out_by["note"] > 0
    assert format_results("x", {"calls": 2, "rate": 1.5}) == ["x.calls: 2", "x.rate: 1.5"]


def test_main_prints_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    """``vivy bench llm-cost`` prints the three replays' calls and tokens per 1,000 messages."""
    assert main([str(TWO_DAYS), "--conversations", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    figures = dict(line.split(": ", 1) for line in out if ": " in line)
    for replay in ("dense", "spaced", "mature"):
        assert float(figures[f"{replay}.llm_calls_per_1000_messages"]) > 0
        assert float(figures[f"{replay}.tokens_in_per_1000_messages"]) > 0


@pytest.mark.anyio
async def test_the_stand_in_answers_every_listed_member_with_operations() -> None:
    """A listed member whose words match no rule still gets operations: their first
    self-disclosing clause as a fact, as a model that always answers would give."""
    llm = CountingLLM()
    lines = (
        TranscriptLine(1, "Ann", "I live in Oslo", 0.0),
        TranscriptLine(2, "Bo", "haha fine, my lips are sealed", 60.0),
        TranscriptLine(3, "Cy", "lol ok", 120.0),
    )
    members = (MemberFacts(1, "Ann", ()), MemberFacts(2, "Bo", ()), MemberFacts(3, "Cy", ()))
    answer = await llm.generate(note_request(NoteInput(1, 2, "general", lines, members)))
    assert isinstance(answer.value, ConversationDraft)
    found = {
        e.user_id: [getattr(op, "text", "") for op in e.operations] for e in answer.value.profiles
    }
    assert found == {1: ["Lives in Oslo"], 2: ["Their lips are sealed"], 3: []}
    assert disclosed_fact("my lips are sealed", ["Their lips are sealed"]) is None


def test_a_full_profile_is_at_the_caps() -> None:
    """The mature replay's profiles hold 45 facts, every section full or one short."""
    facts = full_profile(2)
    assert len(facts) == PROFILE_CAP
    sizes = Counter(section for section, _ in facts)
    assert set(sizes) == set(PROFILE_SECTIONS)
    assert all(SECTION_CAP - 1 <= size <= SECTION_CAP for size in sizes.values())
    assert len({text for _, text in facts}) == PROFILE_CAP
    assert full_profile(2) == facts != full_profile(3)


def test_the_mature_replay_reports_calls_churn_and_participants() -> None:
    """A short mature replay prints its calls per operation, fact churn and the
    distribution of participants per conversation."""
    results = run_spaced(conversations=4, full_profiles=True)
    assert results["calls_note"] == 4
    assert results["participants_per_conversation"] == "2:4"
    assert results["conversations_over_member_cap"] == 0
    assert {"facts_added_per_1000_messages", "facts_folded_per_1000_messages"} <= set(results)
    assert float(results["facts_added_per_1000_messages"]) > 0
