"""Structured output from servers that may not enforce it: the modes, the schema, the parsing.

OpenAI-compatible servers differ in what they enforce. OpenAI, vLLM, llama.cpp and recent
Ollama constrain the answer to a JSON schema (``response_format`` of type ``json_schema``);
some servers only guarantee valid JSON (``json_object``); others accept neither. So a
structured request climbs down a ladder of :class:`StructuredMode` s, and
:class:`StructuredModes` remembers, per server and model, the first mode that was not refused,
so the probe happens once per process and not on every call.

Whatever the mode, the answer is only text until pydantic accepts it: :func:`parse_answer`
finds the JSON in it (a Markdown fence, prose around it, a reasoning model's ``<think>``
block) and validates it; :func:`repair_prompt` quotes the validation error for the one retry
that may fix it. Everything here is pure, apart from the lock of :class:`StructuredModes`.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Mapping
from enum import Enum
from typing import Any

import pydantic

from vivy.errors import LLMInvalidOutput
from vivy.llm.port import T

__all__ = [
    "SERVER_MODES",
    "StructuredMode",
    "StructuredModes",
    "answer_text",
    "estimate_tokens",
    "find_json",
    "is_format_refusal",
    "parse_answer",
    "repair_prompt",
    "response_schema",
    "schema_instruction",
]


class StructuredMode(Enum):
    """How a structured answer is asked for, from the strictest to the loosest."""

    #: ``response_format`` of type ``json_schema``: the server constrains the answer.
    JSON_SCHEMA = "json_schema"
    #: ``response_format`` of type ``json_object``: valid JSON, the schema in the prompt.
    JSON_OBJECT = "json_object"
    #: No ``response_format``: the schema in the prompt, the JSON found in the answer.
    PROMPT = "prompt"

    def next(self) -> StructuredMode | None:
        """The looser mode to try when a server refuses this one (None after the last)."""
        ladder = list(StructuredMode)
        index = ladder.index(self)
        return ladder[index + 1] if index + 1 < len(ladder) else None


class StructuredModes:
    """The structured mode each server and model accepts, learned once per process.

    A server starts at :attr:`StructuredMode.JSON_SCHEMA`; :meth:`refused` moves it one mode
    down for every later call. Safe to share between threads (the importer's private loop
    and the caller's).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._modes: dict[tuple[str, str], StructuredMode] = {}

    def mode(self, server: str, model: str) -> StructuredMode:
        """The mode to ask ``model`` on ``server`` in."""
        with self._lock:
            return self._modes.get((server, model), StructuredMode.JSON_SCHEMA)

    def refused(self, server: str, model: str, mode: StructuredMode) -> StructuredMode | None:
        """Record that ``server`` refused ``mode`` for ``model``; the mode to try next (None
        when even the loosest was refused). A refusal of a mode already left changes nothing."""
        looser = mode.next()
        if looser is None:
            return None
        with self._lock:
            current = self._modes.get((server, model), StructuredMode.JSON_SCHEMA)
            if current is mode:
                current = self._modes[(server, model)] = looser
            return current

    def known(self) -> Mapping[tuple[str, str], StructuredMode]:
        """Every server and model whose mode was moved down, with that mode."""
        with self._lock:
            return dict(self._modes)


#: The modes learned by this process, shared by every OpenAI-compatible client in it.
SERVER_MODES = StructuredModes()

#: JSON Schema keywords kept as they are (grammar-based servers enforce the bounds).
_KEPT_KEYWORDS = (
    "type",
    "description",
    "enum",
    "const",
    "format",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "pattern",
)


def response_schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    """``model``'s JSON Schema in the plain form every server's grammar compiler reads.

    References are inlined, ``oneOf`` becomes ``anyOf`` (without the discriminator), every
    property is required and no other property is allowed, titles and defaults are dropped.
    The pydantic model stays the real check; this schema only steers the answer.
    """
    source = model.model_json_schema()
    return _plain(source, source.get("$defs", {}))


def _plain(node: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    """One JSON Schema node rewritten by the rules of :func:`response_schema`."""
    if "$ref" in node:
        target = _plain(defs[str(node["$ref"]).rsplit("/", 1)[-1]], defs)
        if "description" in node:
            target["description"] = node["description"]
        return target
    variants = node.get("anyOf") or node.get("oneOf")
    if variants:
        out: dict[str, Any] = {"anyOf": [_plain(variant, defs) for variant in variants]}
        if "description" in node:
            out["description"] = node["description"]
        return out
    out = {key: node[key] for key in _KEPT_KEYWORDS if key in node}
    if "properties" in node:
        properties = node["properties"]
        out.pop("description", None)  # a class docstring, written for programmers
        out["type"] = "object"
        out["properties"] = {name: _plain(child, defs) for name, child in properties.items()}
        out["required"] = list(properties)
        out["additionalProperties"] = False
    if "items" in node:
        out["items"] = _plain(node["items"], defs)
    return out


def schema_instruction(schema: Mapping[str, Any]) -> str:
    """The paragraph added to the system prompt when the server does not enforce the schema."""
    return (
        "Answer with one JSON object and nothing else (no prose, no Markdown), "
        "matching this JSON Schema:\n" + json.dumps(schema, separators=(",", ":"))
    )


def repair_prompt(error: str) -> str:
    """The follow-up message of the one retry that quotes why the answer was refused."""
    return (
        f"Your answer was refused: {error}. Answer again with the corrected JSON object "
        "only, following the schema exactly."
    )


_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```(?:json|JSON)?\s*(?P<body>.*?)\s*```", re.DOTALL)


def answer_text(content: str | None) -> str:
    """A message's text without a reasoning model's ``<think>`` block, stripped."""
    return _THINK.sub("", content or "").strip()


def find_json(text: str) -> str | None:
    """The JSON object in ``text``: the whole text, a fenced block, or the first object that
    parses inside prose; None when there is none."""
    stripped = text.strip()
    candidates = [stripped]
    candidates.extend(match["body"] for match in _FENCE.finditer(stripped))
    for candidate in candidates:
        if candidate.startswith("{"):
            try:
                json.loads(candidate)
            except ValueError:
                continue
            return candidate
    decoder = json.JSONDecoder()
    for start in (i for i, char in enumerate(stripped) if char == "{"):
        try:
            value, end = decoder.raw_decode(stripped, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            return stripped[start:end]
    return None


def parse_answer(text: str, schema: type[T], *, who: str) -> T:
    """The JSON in ``text`` validated as ``schema``; :class:`LLMInvalidOutput` in one line
    (naming ``who`` answered) when there is no JSON object or it does not validate."""
    body = find_json(text)
    if body is None:
        shown = " ".join(text.split())[:80]
        raise LLMInvalidOutput(f"{who}'s answer holds no JSON object: {shown!r}")
    return validated_json(body, schema, who=who)


def validated_json(body: str | bytes, schema: type[T], *, who: str) -> T:
    """The JSON ``body`` validated as ``schema``; :class:`LLMInvalidOutput` in one line
    naming ``who`` answered, the count of errors and the first, when it does not validate."""
    try:
        return schema.model_validate_json(body)
    except pydantic.ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "answer"
        raise LLMInvalidOutput(
            f"{who}'s answer does not match {schema.__name__}: "
            f"{error.error_count()} error(s), first at {where}: {first['msg']}"
        ) from error


#: Words in a 400/422 error that show the server refused the ``response_format`` itself.
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "structured output")


def is_format_refusal(status: int, message: str) -> bool:
    """Whether an HTTP error answers the request's ``response_format`` (not its content)."""
    lowered = message.lower()
    return status in (400, 422, 501) and any(word in lowered for word in _FORMAT_WORDS)


def estimate_tokens(text: str) -> int:
    """A token count for a server that reports none: four characters a token."""
    return math.ceil(len(text) / 4) if text else 0
