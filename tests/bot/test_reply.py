"""The pure reply decisions: addressing, rate limits, chat turns and message splitting."""

from __future__ import annotations

import pytest

from vivy.bot.reply import (
    MAX_MESSAGE_CHARS,
    RateDecision,
    RateLimit,
    ReplyRateLimiter,
    build_chat_request,
    is_addressed,
    rate_limited_text,
    render_mentions,
    split_message,
)
from vivy.retrieval import ConversationMessage

VIVY = 1


@pytest.mark.parametrize(
    ("is_bot", "mentions", "replied_to", "expected"),
    [
        (False, [VIVY], None, True),
        (False, [], VIVY, True),
        (False, [7], 7, False),
        (True, [VIVY], VIVY, False),
        (False, [], None, False),
    ],
)
def test_is_addressed(
    is_bot: bool, mentions: list[int], replied_to: int | None, expected: bool
) -> None:
    """Only a human mention of Vivy or a human reply to Vivy asks for an answer."""
    assert (
        is_addressed(VIVY, author_is_bot=is_bot, mentions=mentions, replied_to_author=replied_to)
        is expected
    )


def test_rate_limiter_refills_at_exact_times() -> None:
    """Two tokens per minute: one refills every 30 s; the member is told once per lapse."""
    limiter = ReplyRateLimiter(RateLimit(capacity=2, per_s=60.0))
    assert limiter.check(5, 100.0) is RateDecision.ALLOW
    assert limiter.check(5, 100.0) is RateDecision.ALLOW
    assert limiter.check(5, 100.0) is RateDecision.DENY_NOTIFY
    assert limiter.retry_after(5, 100.0) == 30.0
    assert limiter.check(5, 110.0) is RateDecision.DENY_SILENT
    assert limiter.retry_after(5, 110.0) == pytest.approx(20.0)
    assert limiter.check(6, 110.0) is RateDecision.ALLOW
    assert limiter.check(5, 130.0) is RateDecision.ALLOW
    assert limiter.check(5, 130.0) is RateDecision.DENY_NOTIFY


def test_rate_limiter_forgets_full_buckets_when_crowded() -> None:
    """At its size limit the limiter drops members whose bucket is full again."""
    limiter = ReplyRateLimiter(RateLimit(capacity=1, per_s=10.0), max_members=2)
    limiter.check(1, 0.0)
    limiter.check(2, 0.0)
    assert limiter.check(3, 20.0) is RateDecision.ALLOW
    assert limiter.retry_after(1, 20.0) == 0.0
    assert limiter.check(1, 20.0) is RateDecision.ALLOW


def test_rate_limited_text_rounds_up_to_a_second() -> None:
    """The polite answer names a whole number of seconds."""
    assert "about 1 second " in rate_limited_text(0.2)
    assert "about 12 seconds" in rate_limited_text(12.4)


def test_render_mentions_names_known_users_only() -> None:
    """``<@id>`` and ``<@!id>`` of known users become ``@name``; others stay as they are."""
    text = "hey <@1> and <@!2>, ask <@3>"
    assert render_mentions(text, {1: "Vivy", 2: "Sam"}) == "hey @Vivy and @Sam, ask <@3>"


def test_chat_request_turns_follow_authors() -> None:
    """Vivy's lines are the model's turns, everyone else's the users'; memory goes alongside."""
    conversation = [
        ConversationMessage(2, "Sam", "Which game?"),
        ConversationMessage(VIVY, "Vivy", "Deep Rock Galactic."),
        ConversationMessage(3, "Alex", "Why?"),
        ConversationMessage(3, "Alex", "   "),
    ]
    request = build_chat_request(conversation, VIVY, "<background_facts>\n</background_facts>")
    assert [(t.role, t.author) for t in request.turns] == [
        ("user", "Sam"),
        ("model", "Vivy"),
        ("user", "Alex"),
    ]
    assert request.memory_context == "<background_facts>\n</background_facts>"


def test_short_text_is_one_chunk() -> None:
    """Text within the limit is sent as is (trimmed); empty text sends nothing."""
    assert split_message("  hello  ") == ["hello"]
    assert split_message(" \n ") == []
    exact = "x" * MAX_MESSAGE_CHARS
    assert split_message(exact) == [exact]


def test_split_prefers_paragraphs_then_lines_then_spaces() -> None:
    """Chunks end at a paragraph break when one keeps them half full, else a line, else a space."""
    paragraph = ("alpha beta gamma " * 4).strip()
    text = "\n\n".join(paragraph for _ in range(3))
    assert split_message(text, 150) == [f"{paragraph}\n\n{paragraph}", paragraph]
    lines = "\n".join(f"line number {i:02d}" for i in range(20))
    chunks = split_message(lines, 100)
    assert all(len(c) <= 100 for c in chunks)
    assert all(c.startswith("line number") and c.endswith(tuple("0123456789")) for c in chunks)
    assert "\n".join(chunks) == lines
    words = " ".join(f"word{i}" for i in range(60))
    chunks = split_message(words, 64)
    assert " ".join(chunks) == words
    assert all(len(c) <= 64 for c in chunks)


def test_a_word_longer_than_a_chunk_is_cut_hard() -> None:
    """Text without any break point is cut at the limit rather than lost."""
    chunks = split_message("y" * 250, 100)
    assert "".join(chunks) == "y" * 250
    assert all(len(c) <= 100 for c in chunks)


def test_a_code_fence_is_closed_and_reopened_across_chunks() -> None:
    """A fenced block cut in two stays fenced on both sides."""
    code = "\n".join(f"print({i})" for i in range(40))
    chunks = split_message(f"Here:\n```\n{code}\n```", 120)
    assert all(len(c) <= 120 for c in chunks)
    assert all(c.count("```") % 2 == 0 for c in chunks)
    body = "\n".join(c.removeprefix("```\n").removesuffix("\n```") for c in chunks)
    assert all(f"print({i})" in body for i in range(40))


def test_split_refuses_a_tiny_limit() -> None:
    """A limit too small to hold a reopened fence is a programming error."""
    with pytest.raises(ValueError, match="at least 32"):
        split_message("text", 10)
