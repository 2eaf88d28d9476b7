"""The Gemini implementation of the LLM port, through the google-genai SDK.

Three things here are deliberate:

* The SDK gets an explicit ``httpx2.AsyncClient`` (``HttpOptions.httpx_async_client``).
  Left alone, it sends async requests through aiohttp whenever aiohttp is installed (hikari
  installs it), and aiohttp only runs on asyncio; its own httpx wrapper keys connection
  pools by asyncio loop. A plain httpx2 client runs on asyncio and trio alike.
* Retries are ours alone. The SDK is told to make one attempt (``HttpRetryOptions(attempts=1)``)
  and :func:`~vivy.llm.retry.call_with_retries` retries time-outs, 408/429/5xx and invalid
  output with jittered exponential backoff, sleeping through anyio.
* SDK and httpx2 exceptions are translated at this boundary (:func:`_mapped_errors`), and
  every answer is checked for blocks, emptiness and its pydantic schema before it leaves.
  The tokens of an answer refused and retried are added to the usage of the one accepted,
  so the metered tokens of an operation are what it cost.

Gemini's explicit context caching (``client.caches``) is not used: a cache holds at least
1,024 to 4,096 tokens depending on the model, while Vivy's longest shared prefix (the note
system prompt with the profile rules) is about 630; a cached request may not carry its own
system instruction, so every prompt variant would need a cache of its own, kept alive (and
paid for) by the hour. The prompts are short instead, with the shared instructions first,
so the models that cache implicitly (Gemini 2.5) reuse the prefix when it is long enough.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
import pydantic
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from vivy.config import GEMINI_KEY_VARIABLES, gemini_key_from_env
from vivy.errors import ConfigError, LLMError, LLMInvalidOutput, LLMUnavailable
from vivy.llm.port import (
    ChatAnswer,
    ChatRequest,
    ChatTurn,
    EmbeddingTask,
    Generation,
    GenerationRequest,
    ModelTier,
    T,
    Usage,
    l2_normalise,
)
from vivy.llm.prompts import chat_system_instruction
from vivy.llm.retry import (
    Backoff,
    LLMRateLimited,
    call_with_retries,
    retry_after,
    retryable_status,
)
from vivy.llm.structured import validated_json

if TYPE_CHECKING:
    from types import TracebackType

__all__ = [
    "GEMINI_KEY_VARIABLES",
    "GeminiConfig",
    "GeminiLLM",
    "gemini_key_from_env",
    "gemini_response_schema",
]

#: The largest batch ``batchEmbedContents`` accepts.
MAX_EMBED_BATCH = 100

_TASK_TYPES: dict[EmbeddingTask, str] = {
    EmbeddingTask.DOCUMENT: "RETRIEVAL_DOCUMENT",
    EmbeddingTask.QUERY: "RETRIEVAL_QUERY",
}

#: Finish reasons that leave a usable answer; any other one (SAFETY, RECITATION, ...) is a block.
_FINISHED = frozenset(
    {
        types.FinishReason.STOP,
        types.FinishReason.MAX_TOKENS,
        types.FinishReason.FINISH_REASON_UNSPECIFIED,
    }
)

_FENCE = re.compile(r"^```(?:json)?\s*(?P<body>.*?)\s*```$", re.DOTALL)

#: JSON Schema keywords that Gemini's OpenAPI-subset schema understands, copied as they are.
_KEPT_KEYWORDS = (
    "description",
    "format",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "pattern",
)


@dataclass(frozen=True, slots=True)
class GeminiConfig:
    """How to reach Gemini: key, model names, embedding size, endpoint and patience.

    ``base_url`` overrides the endpoint (a local fake server in tests); when it is None the
    SDK's default applies, which honours ``GOOGLE_GEMINI_BASE_URL``. ``timeout_s`` bounds
    every wait of an HTTP attempt (connect, send, each read); ``backoff`` holds the retry
    schedule and the attempt limit. Invalid values raise :class:`~vivy.errors.ConfigError`.
    """

    api_key: str = field(repr=False)
    flash_model: str = "gemini-2.0-flash"
    pro_model: str = "gemini-2.5-pro"
    embedding_model: str = "gemini-embedding-001"
    dimension: int = 768
    base_url: str | None = None
    timeout_s: float = 60.0
    backoff: Backoff = field(default_factory=Backoff)
    embed_batch_size: int = MAX_EMBED_BATCH

    def __post_init__(self) -> None:
        if not self.api_key.strip():
            raise ConfigError("a Gemini API key is required")
        if self.timeout_s <= 0:
            raise ConfigError("the Gemini time-out must be positive")
        if self.dimension < 1:
            raise ConfigError("the embedding dimension must be positive")
        if not 1 <= self.embed_batch_size <= MAX_EMBED_BATCH:
            raise ConfigError(f"embed_batch_size must be between 1 and {MAX_EMBED_BATCH}")

    @property
    def max_attempts(self) -> int:
        """How many attempts a call gets before its last error is raised."""
        return self.backoff.max_attempts


def gemini_response_schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    """``model``'s JSON Schema rewritten into the OpenAPI subset Gemini accepts.

    References are inlined, ``oneOf`` becomes ``anyOf``, ``const`` becomes a one-value
    ``enum``, ``X | None`` becomes ``nullable`` and keywords Gemini rejects
    (``additionalProperties``, ``discriminator``, ``title``, ``default``) are dropped, as
    are class docstrings (written for programmers, not for the model). Every property is
    required, so the model always states each field, if only as an empty list. The pydantic
    model stays the real check; this schema only steers the model's output.
    """
    source = model.model_json_schema()
    return _convert_schema(source, source.get("$defs", {}))


def _convert_schema(node: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    """One JSON Schema node converted by the rules of :func:`gemini_response_schema`."""
    if "$ref" in node:
        target = _convert_schema(defs[str(node["$ref"]).rsplit("/", 1)[-1]], defs)
        if "description" in node:
            target["description"] = node["description"]
        return target
    variants = node.get("anyOf") or node.get("oneOf")
    if variants:
        concrete = [variant for variant in variants if variant.get("type") != "null"]
        if len(concrete) == 1:
            converted = _convert_schema(concrete[0], defs)
        else:
            converted = {"anyOf": [_convert_schema(variant, defs) for variant in concrete]}
        if len(concrete) < len(variants):
            converted["nullable"] = True
        if "description" in node:
            converted["description"] = node["description"]
        return converted
    out: dict[str, Any] = {}
    if "type" in node:
        out["type"] = node["type"]
    if "const" in node:
        out.setdefault("type", "string")
        out["enum"] = [node["const"]]
    if "enum" in node:
        out["enum"] = list(node["enum"])
    for keyword in _KEPT_KEYWORDS:
        if keyword in node:
            out[keyword] = node[keyword]
    if "properties" in node:
        properties = node["properties"]
        out.pop("description", None)
        out["properties"] = {
            name: _convert_schema(child, defs) for name, child in properties.items()
        }
        out["propertyOrdering"] = list(properties)
        out["required"] = list(properties)
    if "items" in node:
        out["items"] = _convert_schema(node["items"], defs)
    return out


@contextmanager
def _mapped_errors() -> Iterator[None]:
    """Translate google-genai and httpx2 exceptions into :class:`LLMError` s."""
    try:
        yield
    except genai_errors.APIError as error:
        detail = f"Gemini answered HTTP {error.code} {error.status or ''}: {error.message or ''}"
        if error.code == 429:
            headers = getattr(error.response, "headers", None) or {}
            wait = retry_after(dict(headers), error.details)
            raise LLMRateLimited(detail.strip(), retry_after_s=wait) from error
        if retryable_status(error.code):
            raise LLMUnavailable(detail.strip()) from error
        raise LLMError(detail.strip()) from error
    except httpx2.TimeoutException as error:
        raise LLMUnavailable(f"Gemini timed out ({type(error).__name__})") from error
    except httpx2.TransportError as error:
        raise LLMUnavailable(f"Gemini unreachable ({type(error).__name__}: {error})") from error
    except (json.JSONDecodeError, pydantic.ValidationError) as error:
        raise LLMInvalidOutput(f"Gemini sent an unreadable response ({error})") from error


def _answer_text(response: types.GenerateContentResponse) -> str:
    """The text of the first candidate, or :class:`LLMInvalidOutput` if blocked or empty."""
    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason is not None:
        raise LLMInvalidOutput(f"Gemini blocked the prompt ({feedback.block_reason.value})")
    if not response.candidates:
        raise LLMInvalidOutput("Gemini returned no candidates")
    candidate = response.candidates[0]
    reason = candidate.finish_reason
    if reason is not None and reason not in _FINISHED:
        raise LLMInvalidOutput(f"Gemini stopped the answer ({reason.value})")
    parts = candidate.content.parts if candidate.content is not None else None
    text = "".join(part.text for part in parts or () if part.text and not part.thought)
    if not text.strip():
        raise LLMInvalidOutput("Gemini returned an empty answer")
    return text


def _parse(text: str, schema: type[T]) -> T:
    """``text`` validated as ``schema`` (tolerating a Markdown code fence around the JSON)."""
    fenced = _FENCE.match(text.strip())
    body = fenced["body"] if fenced else text
    return validated_json(body, schema, who="Gemini")


def _usage(response: types.GenerateContentResponse) -> Usage:
    """Token counts from the response's usage metadata (thinking counts as output)."""
    meta = response.usage_metadata
    if meta is None:
        return Usage()
    output = (meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0)
    return Usage(input_tokens=meta.prompt_token_count or 0, output_tokens=output)


def _turn_text(turn: ChatTurn) -> str:
    """A chat turn as sent: users' messages carry their author's name, the bot's do not."""
    return turn.text if turn.role == "model" else f"{turn.author}: {turn.text}"


class GeminiLLM:
    """The LLM port served by Gemini.

    Pass ``http_client`` to share or configure the httpx2 client (it is then not closed
    here); pass ``rng`` to make the retry jitter reproducible.
    """

    def __init__(
        self,
        config: GeminiConfig,
        *,
        http_client: httpx2.AsyncClient | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.dimension = config.dimension
        self.embedding_model = config.embedding_model
        self.quality = "gemini"
        self._config = config
        self._rng = rng if rng is not None else random.Random()
        self._owns_http = http_client is None
        self._http = (
            http_client
            if http_client is not None
            else httpx2.AsyncClient(timeout=httpx2.Timeout(config.timeout_s))
        )
        self._client = genai.Client(
            api_key=config.api_key,
            vertexai=False,
            http_options=types.HttpOptions(
                base_url=config.base_url,
                timeout=math.ceil(config.timeout_s * 1000),
                retry_options=types.HttpRetryOptions(attempts=1),
                httpx_async_client=self._http,
            ),
        )
        self._schemas: dict[type[pydantic.BaseModel], types.Schema] = {}

    @property
    def config(self) -> GeminiConfig:
        """The configuration this client was built with."""
        return self._config

    def model_for(self, tier: ModelTier) -> str:
        """The configured flash or pro model name."""
        return self._config.pro_model if tier is ModelTier.PRO else self._config.flash_model

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """A structured answer from Gemini, validated against ``request.schema``."""
        model = self.model_for(request.tier)
        config = types.GenerateContentConfig(
            system_instruction=request.system,
            response_mime_type="application/json",
            response_schema=self._response_schema(request.schema),
            temperature=0.2,
        )
        spent: list[Usage] = []
        attempt = partial(self._generate_once, model, request, config, spent)
        answer = await call_with_retries(
            attempt, self._config.backoff, self._rng, operation=request.operation.value
        )
        usage = Usage(
            input_tokens=sum(u.input_tokens for u in spent),
            output_tokens=sum(u.output_tokens for u in spent),
        )
        return Generation(value=answer.value, usage=usage, model=model, quality=self.quality)

    async def _generate_once(
        self,
        model: str,
        request: GenerationRequest[T],
        config: types.GenerateContentConfig,
        spent: list[Usage],
    ) -> Generation[T]:
        """One generateContent call, parsed and validated; its usage is appended to ``spent``."""
        with _mapped_errors():
            response = await self._client.aio.models.generate_content(
                model=model, contents=request.prompt, config=config
            )
        spent.append(_usage(response))
        value = _parse(_answer_text(response), request.schema)
        return Generation(value=value, usage=spent[-1], model=model, quality=self.quality)

    async def chat(self, request: ChatRequest) -> ChatAnswer:
        """A free-text reply from Gemini to the conversation in ``request``."""
        model = self.model_for(request.tier)
        contents: list[types.Content] = [
            types.Content(role=turn.role, parts=[types.Part(text=_turn_text(turn))])
            for turn in request.turns
        ]
        if not contents:
            contents = [types.Content(role="user", parts=[types.Part(text="(no message)")])]
        config = types.GenerateContentConfig(system_instruction=chat_system_instruction(request))
        attempt = partial(self._chat_once, model, contents, config)
        return await call_with_retries(attempt, self._config.backoff, self._rng, operation="chat")

    async def _chat_once(
        self,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig,
    ) -> ChatAnswer:
        """One chat generateContent call."""
        with _mapped_errors():
            response = await self._client.aio.models.generate_content(
                model=model,
                contents=contents,
                config=config,
            )
        text = _answer_text(response).strip()
        return ChatAnswer(text=text, usage=_usage(response), model=model, quality=self.quality)

    async def embed(self, texts: Sequence[str], task: EmbeddingTask) -> list[list[float]]:
        """Normalised embeddings of ``texts``, fetched in batches of at most 100.

        Blank texts are sent as ``"(empty)"``, since the API refuses empty content and one
        blank text would otherwise fail its whole batch.
        """
        await anyio.lowlevel.checkpoint()
        prepared = [text if text.strip() else "(empty)" for text in texts]
        size = self._config.embed_batch_size
        vectors: list[list[float]] = []
        for start in range(0, len(prepared), size):
            batch = prepared[start : start + size]
            attempt = partial(self._embed_once, batch, task)
            vectors.extend(
                await call_with_retries(attempt, self._config.backoff, self._rng, operation="embed")
            )
        return vectors

    async def _embed_once(self, batch: list[str], task: EmbeddingTask) -> list[list[float]]:
        """One batchEmbedContents call, checked and normalised."""
        config = types.EmbedContentConfig(
            task_type=_TASK_TYPES[task], output_dimensionality=self.dimension
        )
        with _mapped_errors():
            response = await self._client.aio.models.embed_content(
                model=self.embedding_model,
                contents=batch,
                config=config,
            )
        embeddings = response.embeddings or []
        if len(embeddings) != len(batch):
            raise LLMInvalidOutput(
                f"Gemini returned {len(embeddings)} embeddings for {len(batch)} texts"
            )
        vectors: list[list[float]] = []
        for embedding in embeddings:
            values = embedding.values or []
            if len(values) != self.dimension:
                raise LLMInvalidOutput(
                    f"Gemini returned a {len(values)}-dimensional embedding, "
                    f"expected {self.dimension}"
                )
            try:
                vectors.append(l2_normalise(values))
            except ValueError as error:
                raise LLMInvalidOutput(
                    f"Gemini returned an unusable embedding ({error})"
                ) from error
        return vectors

    def _response_schema(self, schema: type[pydantic.BaseModel]) -> types.Schema:
        """The Gemini response schema for ``schema``, converted once and cached."""
        cached = self._schemas.get(schema)
        if cached is None:
            cached = types.Schema.model_validate(gemini_response_schema(schema))
            self._schemas[schema] = cached
        return cached

    async def aclose(self) -> None:
        """Close the httpx2 client if this object created it."""
        self._client.close()
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> GeminiLLM:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
