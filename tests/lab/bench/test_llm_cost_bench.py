"""The LLM-cost benchmark: its spaced history, and its counting of calls and tokens."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from tests.importer import TWO_DAYS
from vivy.importer import load_exports
from vivy.llm.prompts import note_request
from vivy.llm.schemas import MemberFacts, NoteInput, TranscriptLine
from vivy_lab.bench.llm_cost import CountingLLM, format_results, main, spaced_export


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
    """``vivy bench llm-cost`` prints both replays' calls and tokens per 1,000 messages."""
    assert main([str(TWO_DAYS), "--conversations", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    figures = dict(line.split(": ", 1) for line in out if ": " in line)
    for replay in ("bundled", "spaced"):
        assert float(figures[f"{replay}.llm_calls_per_1000_messages"]) > 0
        assert float(figures[f"{replay}.tokens_in_per_1000_messages"]) > 0
