"""The structured-output ladder, schema and parsing, without any server."""

from __future__ import annotations

import json

import pytest

from vivy.errors import LLMInvalidOutput
from vivy.llm.schemas import NoteDraft, ProfileOperations
from vivy.llm.structured import (
    StructuredMode,
    StructuredModes,
    answer_text,
    find_json,
    is_format_refusal,
    parse_answer,
    response_schema,
)

NOTE = {"title": "t", "summary": "s", "topics": [], "decisions": [], "open_questions": []}


def test_the_ladder_goes_down_once_per_refusal_and_stops_at_the_prompt() -> None:
    """Schema, then JSON mode, then prompt; each server and model keeps its own place."""
    modes = StructuredModes()
    assert modes.mode("s", "m") is StructuredMode.JSON_SCHEMA
    assert modes.refused("s", "m", StructuredMode.JSON_SCHEMA) is StructuredMode.JSON_OBJECT
    assert modes.refused("s", "m", StructuredMode.JSON_SCHEMA) is StructuredMode.JSON_OBJECT
    assert modes.refused("s", "m", StructuredMode.JSON_OBJECT) is StructuredMode.PROMPT
    assert modes.refused("s", "m", StructuredMode.PROMPT) is None
    assert modes.mode("s", "m") is StructuredMode.PROMPT
    assert modes.mode("s", "other") is StructuredMode.JSON_SCHEMA
    assert modes.known() == {("s", "m"): StructuredMode.PROMPT}


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('{"a": 1}', '{"a": 1}'),
        ('```json\n{"a": 1}\n```', '{"a": 1}'),
        ('Sure! {"a": {"b": [1, 2]}} Hope that helps.', '{"a": {"b": [1, 2]}}'),
        ('Here: {not json} and then {"a": 2}', '{"a": 2}'),
        ("no JSON at all", None),
        ("[1, 2]", None),
    ],
)
def test_find_json(text: str, found: str | None) -> None:
    """The object is found whole, in a fence, or inside prose; a list or prose is not one."""
    assert find_json(text) == found


def test_answer_text_drops_a_reasoning_block() -> None:
    """``<think>`` blocks go, whitespace is stripped, None is empty."""
    assert answer_text("<think>\nhmm {x}\n</think>\n  hello ") == "hello"
    assert answer_text(None) == ""


def test_parse_answer_explains_in_one_line() -> None:
    """No JSON, or JSON off the schema: one line naming who answered and what is wrong."""
    assert parse_answer(json.dumps(NOTE), NoteDraft, who="m").title == "t"
    with pytest.raises(LLMInvalidOutput, match="m's answer holds no JSON object: 'I think so'"):
        parse_answer("I think\nso", NoteDraft, who="m")
    with pytest.raises(LLMInvalidOutput, match="first at title") as caught:
        parse_answer(json.dumps({**NOTE, "title": ""}), NoteDraft, who="m")
    assert "\n" not in str(caught.value)


def test_the_response_schema_is_plain_and_closed() -> None:
    """References inlined, unions as anyOf, every object closed with every field required."""
    schema = response_schema(ProfileOperations)
    text = json.dumps(schema)
    assert "$ref" not in text and "oneOf" not in text and "discriminator" not in text
    assert "title" not in schema and "default" not in text
    variants = schema["properties"]["operations"]["items"]["anyOf"]
    assert {v["properties"]["op"]["const"] for v in variants} == {
        "add",
        "merge",
        "invalidate",
        "keep",
    }
    assert all(v["additionalProperties"] is False for v in variants)
    assert all(v["required"] == list(v["properties"]) for v in variants)


@pytest.mark.parametrize(
    ("status", "message", "refusal"),
    [
        (400, "response_format type 'json_schema' is not supported", True),
        (422, "Unsupported value for json_object", True),
        (400, "This model's maximum context length is 8192 tokens", False),
        (500, "response_format broke", False),
    ],
)
def test_format_refusals_are_told_from_other_errors(
    status: int, message: str, refusal: bool
) -> None:
    """Only a 400/422/501 about the format moves a server down the ladder."""
    assert is_format_refusal(status, message) is refusal
