"""The output schemas: strict limits, no extra fields, a discriminated union of operations."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from vivy.llm.schemas import (
    MAX_SUMMARY_CHARS,
    AddFact,
    ClusterDraft,
    InvalidateFact,
    KeepFact,
    MergeFacts,
    NoteDraft,
    ProfileOperations,
    decode_operations,
    encode_operations,
)
from vivy.memory import facts

NOTE: dict[str, Any] = {"title": "Co-op night", "summary": "Alex and Sam planned a session."}


def test_note_draft_defaults_lists_and_strips_text() -> None:
    """Missing lists default to empty and surrounding whitespace is stripped."""
    note = NoteDraft.model_validate({"title": "  Co-op night ", "summary": "Planned."})
    assert note.title == "Co-op night"
    assert (note.topics, note.decisions, note.open_questions, note.entities) == ([], [], [], [])


@pytest.mark.parametrize(
    "change",
    [
        {"title": "x" * 81},
        {"title": "   "},
        {"topics": [f"t{i}" for i in range(11)]},
        {"entities": ["x" * 81]},
        {"decisions": [""]},
        {"mood": "happy"},
    ],
)
def test_note_draft_rejects_out_of_bounds_answers(change: dict[str, Any]) -> None:
    """Over-long text, too many items, blank strings and extra fields all fail."""
    with pytest.raises(ValidationError):
        NoteDraft.model_validate({**NOTE, **change})


def test_a_too_long_summary_is_clipped_at_a_sentence_end() -> None:
    """A summary over 1,200 characters is cut after its last whole sentence, not refused."""
    sentence = "Alex and Sam planned the game night for Friday. "
    draft = NoteDraft.model_validate({**NOTE, "summary": sentence * 40})
    assert len(draft.summary) <= MAX_SUMMARY_CHARS
    assert draft.summary.endswith("for Friday.")
    assert draft.summary.startswith(sentence.strip())


def test_a_too_long_summary_without_sentences_is_clipped_at_a_word() -> None:
    """Without a sentence end in reach the cut falls between words and is marked with "…"."""
    draft = NoteDraft.model_validate({**NOTE, "summary": "word " * 400})
    assert len(draft.summary) <= MAX_SUMMARY_CHARS
    assert draft.summary.endswith("word…")


def test_profile_operations_parse_by_op() -> None:
    """Each op value selects its own model."""
    parsed = ProfileOperations.model_validate(
        {
            "operations": [
                {"op": "add", "section": "bio", "text": "Lives in Austin"},
                {
                    "op": "merge",
                    "fact_ids": [1, 2],
                    "text": "Owns an Xbox and a PS5",
                    "section": "other",
                },
                {"op": "invalidate", "fact_id": 3, "reason": "moved"},
                {"op": "keep", "fact_id": 4},
            ]
        }
    )
    assert [type(op) for op in parsed.operations] == [AddFact, MergeFacts, InvalidateFact, KeepFact]
    add = parsed.operations[0]
    assert isinstance(add, AddFact) and add.note_id is None and add.evidence == ""


@pytest.mark.parametrize(
    "operation",
    [
        {"op": "delete", "fact_id": 1},
        {"op": "add", "section": "secrets", "text": "x"},
        {"op": "add", "section": "bio", "text": "x" * 201},
        {"op": "merge", "fact_ids": [], "text": "x", "section": "bio"},
        {"op": "keep", "fact_id": 1, "note": "extra"},
        {"op": "invalidate"},
    ],
)
def test_profile_operations_reject_bad_operations(operation: dict[str, Any]) -> None:
    """Unknown ops, unknown sections, long text, empty merges and extras are refused."""
    with pytest.raises(ValidationError):
        ProfileOperations.model_validate({"operations": [operation]})


def test_cluster_draft_limits() -> None:
    """At most eight clusters, each citing at least one note."""
    cluster = {"title": "Games", "summary": "Games.", "source_note_ids": [1]}
    assert len(ClusterDraft.model_validate({"clusters": [cluster] * 8}).clusters) == 8
    with pytest.raises(ValidationError):
        ClusterDraft.model_validate({"clusters": [cluster] * 9})
    with pytest.raises(ValidationError):
        ClusterDraft.model_validate({"clusters": [{**cluster, "source_note_ids": []}]})


def test_models_are_frozen() -> None:
    """Validated answers cannot be altered after the fact."""
    note = NoteDraft.model_validate(NOTE)
    with pytest.raises(ValidationError):
        note.title = "changed"


def test_stored_operations_are_validated_again() -> None:
    """A row whose JSON no longer fits the schema is never applied: it needs its own call."""
    assert decode_operations(None) is None
    assert decode_operations('{"operations": [{"op": "grant_admin"}]}') is None


def test_stored_operations_keep_no_quotes_and_read_back_as_records() -> None:
    """Evidence quotes are not stored; the operations read back as the domain's records."""
    quoted = AddFact(op="add", section="bio", text="Lives in Oslo", evidence="<@9> I live in Oslo")
    merge = MergeFacts(op="merge", fact_ids=[1, 2], text="Lives in Oslo", section="bio")
    stored = encode_operations([quoted, merge, KeepFact(op="keep", fact_id=3)])
    assert "I live in Oslo" not in stored
    assert decode_operations(stored) == (
        facts.AddFact("bio", "Lives in Oslo"),
        facts.MergeFacts((1, 2), "Lives in Oslo", "bio"),
        facts.KeepFact(3),
    )
