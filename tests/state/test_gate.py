"""Tests of the capture gate and text normalisation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vivy.state.gate import (
    _DROP,
    MAX_TEXT_CHARS,
    CapturePolicy,
    IngestOutcome,
    admit,
    normalize_text,
)

POLICY = CapturePolicy(
    own_user_id=1,
    allowed_guilds=frozenset({10}),
    blacklisted_users=frozenset({66}),
    blacklisted_channels=frozenset({99}),
)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"author_id": 5}, None),
        ({"author_id": 1}, IngestOutcome.EXCLUDED_BOT),
        ({"author_id": 5, "author_is_bot": True}, IngestOutcome.EXCLUDED_BOT),
        ({"author_id": 5, "guild_id": 11}, IngestOutcome.EXCLUDED_GUILD),
        ({"author_id": 66}, IngestOutcome.EXCLUDED_BLACKLIST),
        ({"author_id": 5, "channel_id": 99}, IngestOutcome.EXCLUDED_BLACKLIST),
        ({"author_id": 5, "opted_out": True}, IngestOutcome.EXCLUDED_OPT_OUT),
    ],
)
def test_admit(kwargs: dict[str, object], expected: IngestOutcome | None) -> None:
    """Bots, Vivy itself, other guilds, blacklists and opted-out members are excluded."""
    args: dict[str, object] = {
        "guild_id": 10,
        "channel_id": 20,
        "author_is_bot": False,
        "opted_out": False,
    }
    args.update(kwargs)
    assert admit(POLICY, **args) == expected  # type: ignore[arg-type]


def test_capture_switched_off_excludes_everything() -> None:
    """With capture disabled by configuration nothing is admitted."""
    off = CapturePolicy(capture_enabled=False)
    outcome = admit(
        off, guild_id=1, channel_id=2, author_id=3, author_is_bot=False, opted_out=False
    )
    assert outcome is IngestOutcome.CAPTURE_DISABLED


def test_any_guild_is_allowed_without_an_allow_list() -> None:
    """No allow-list means every guild may be captured."""
    assert (
        admit(
            CapturePolicy(),
            guild_id=5,
            channel_id=1,
            author_id=2,
            author_is_bot=False,
            opted_out=False,
        )
        is None
    )


@pytest.mark.parametrize("text", ["", "   ", "\u200b\u200d", "\n\t "])
def test_invisible_text_is_dropped(text: str) -> None:
    """Empty, whitespace-only and zero-width-only text leaves nothing to store."""
    assert normalize_text(text) is None


def test_long_text_is_truncated() -> None:
    """Text over the limit is cut to the limit and reported as truncated."""
    result = normalize_text("x" * (MAX_TEXT_CHARS + 50))
    assert result == ("x" * MAX_TEXT_CHARS, True)


def test_zero_width_characters_are_removed_inside_text() -> None:
    """Zero-width characters hidden inside words are removed; markdown is kept."""
    assert normalize_text("  he\u200bllo **world**\r\n") == ("hello **world**", False)


@given(st.text(max_size=200))
def test_the_printable_fast_path_changes_nothing(text: str) -> None:
    """Skipping the removal for printable text gives what the full removal gives."""
    full = text.replace("\r\n", "\n").translate(_DROP).strip()
    expected = None if not full else (full[:MAX_TEXT_CHARS], len(full) > MAX_TEXT_CHARS)
    assert normalize_text(text) == expected
    cleaned = normalize_text(text)
    if cleaned is not None:
        assert all(ord(c) not in _DROP for c in cleaned[0])
