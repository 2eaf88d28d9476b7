"""The LLM port served by any OpenAI-compatible endpoint, through the official ``openai`` SDK.

Ollama, vLLM, llama.cpp's server, LM Studio, OpenAI and OpenRouter all speak the chat
completions and embeddings API under a ``/v1`` base URL. What is deliberate here:

* The SDK gets an ``httpx2.AsyncClient`` of ours. Its own default client closes itself from
  ``__del__`` through asyncio's running loop, which does not exist under trio; a client we
  create and close runs on asyncio and trio alike.
* Retries are ours alone (``max_retries=0``): :func:`~vivy.llm.retry.call_with_retries`
  retries time-outs, 408/429/5xx (waiting at least what ``Retry-After`` asks) and invalid
  output, with jittered backoff through anyio.
* Structured output climbs down :class:`~vivy.llm.structured.StructuredMode` s as servers
  refuse them, remembered per server and model for the process, and an answer that fails
  its schema is repaired once (:class:`~vivy.llm.openai_structured.StructuredCall`).
* Embeddings ask for ``dimensions`` (OpenAI's models shorten to it) until a server refuses
  the parameter; a vector of another length than the configured dimension is an error
  naming ``VIVY_OPENAI_EMBEDDING_DIMENSION``, never a vector stored.
* SDK exceptions are translated at this boundary
  (:func:`~vivy.llm.openai_sdk.mapped_errors`) into one-line :class:`~vivy.errors.LLMError` s
  that name the setting to fix where one is at fault.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

import anyio.lowlevel
import httpx2
import openai
import pydantic
from openai import Omit, omit
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from openai.types.chat.completion_create_params import ResponseFormat

from vivy.config import OPENAI_EMBEDDING_MODEL, OPENAI_FLASH_MODEL
from vivy.errors import ConfigError, EndpointUnreachable, LLMError, LLMInvalidOutput, LLMUnavailable
from vivy.llm.openai_sdk import completion_text, completion_usage, mapped_errors, status_of
from vivy.llm.openai_structured import StructuredCall
from vivy.llm.port import (
    ChatAnswer,
    ChatRequest,
    EmbeddingTask,
    Generation,
    GenerationRequest,
    ModelTier,
    T,
    l2_normalise,
)
from vivy.llm.prompts import chat_system_instruction
from vivy.llm.retry import Backoff, call_with_retries
from vivy.llm.structured import SERVER_MODES, StructuredModes, validated_json

if TYPE_CHECKING:
    from types import TracebackType

__all__ = [
    "OPENAI_QUALITY",
    "OpenAIConfig",
    "OpenAILLM",
    "Role",
    "WrongDimension",
    "check_endpoint",
]

#: The quality label of everything an OpenAI-compatible endpoint writes.
OPENAI_QUALITY = "openai"

#: The setting naming each model, for errors that say what to change.
_FLASH_VARIABLE = "VIVY_OPENAI_FLASH_MODEL"
_PRO_VARIABLE = "VIVY_OPENAI_PRO_MODEL"
_EMBEDDING_VARIABLE = "VIVY_OPENAI_EMBEDDING_MODEL"


@dataclass(frozen=True, slots=True)
class OpenAIConfig:
    """How to reach an OpenAI-compatible endpoint: URL, key, models, dimension, patience.

    ``api_key`` may be None for local servers (a placeholder is sent). ``timeout_s`` bounds
    every wait of an HTTP attempt; ``backoff`` holds the retry schedule. A prefix goes, with a
    space, before every stored document or every query embedded. Invalid values raise
    :class:`~vivy.errors.ConfigError`.
    """

    base_url: str
    api_key: str | None = field(default=None, repr=False)
    flash_model: str = OPENAI_FLASH_MODEL
    pro_model: str = OPENAI_FLASH_MODEL
    embedding_model: str = OPENAI_EMBEDDING_MODEL
    dimension: int = 768
    timeout_s: float = 120.0
    backoff: Backoff = field(default_factory=Backoff)
    embed_batch_size: int = 64
    document_prefix: str = ""
    query_prefix: str = ""

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ConfigError("the OpenAI-compatible time-out must be positive")
        if self.dimension < 1:
            raise ConfigError("the embedding dimension must be positive")
        if self.embed_batch_size < 1:
            raise ConfigError("embed_batch_size must be at least 1")

    @property
    def server(self) -> str:
        """The endpoint as errors name it: scheme, host and port."""
        parts = urlsplit(self.base_url)
        return f"{parts.scheme}://{parts.netloc}"


class WrongDimension(LLMError):
    """The embedding model answered vectors of another length than the configured one.

    Repeating the call cannot fix it, so it is not retried; the work that needed the vectors
    stays pending until the setting or the model is changed.
    """


class Embedding(pydantic.BaseModel):
    """One vector of an embeddings answer, by the position of its text in the request."""

    index: int
    embedding: list[float]


class EmbeddingsAnswer(pydantic.BaseModel):
    """What Vivy reads of an embeddings answer (``data``; the rest is ignored)."""

    data: list[Embedding]


class _DimensionsRefused(Exception):
    """The server refused the embeddings request's ``dimensions`` parameter."""


class OpenAILLM:
    """The LLM port served by an OpenAI-compatible endpoint.

    Pass ``http_client`` to share or configure the httpx2 client (it is then not closed
    here), ``rng`` to make the retry jitter reproducible, and ``modes`` to keep the learned
    structured modes apart from the process's (tests).
    """

    def __init__(
        self,
        config: OpenAIConfig,
        *,
        http_client: httpx2.AsyncClient | None = None,
        rng: random.Random | None = None,
        modes: StructuredModes = SERVER_MODES,
    ) -> None:
        self.dimension = config.dimension
        self.embedding_model = config.embedding_model
        self.quality = OPENAI_QUALITY
        self._config = config
        self._rng = rng if rng is not None else random.Random()
        self._modes = modes
        self._owns_http = http_client is None
        self._http = (
            http_client
            if http_client is not None
            else httpx2.AsyncClient(timeout=httpx2.Timeout(config.timeout_s))
        )
        self._client = openai.AsyncOpenAI(
            api_key=config.api_key or "unused",
            base_url=config.base_url,
            max_retries=0,
            timeout=config.timeout_s,
            http_client=self._http,
        )
        #: Whether the server takes ``dimensions`` on embeddings; None until it was asked.
        self._dimensions_taken: bool | None = None

    @property
    def config(self) -> OpenAIConfig:
        """The configuration this client was built with."""
        return self._config

    def model_for(self, tier: ModelTier) -> str:
        """The configured flash or pro model name."""
        return self._config.pro_model if tier is ModelTier.PRO else self._config.flash_model

    def _variable(self, tier: ModelTier) -> str:
        return _PRO_VARIABLE if tier is ModelTier.PRO else _FLASH_VARIABLE

    def _who(self, model: str) -> str:
        return f"{model} at {self._config.server}"

    def _mapped_errors(self, variable: str, model: str) -> AbstractContextManager[None]:
        """The SDK's exceptions of a call to ``model`` (named by ``variable``) translated."""
        return mapped_errors(
            self._config.server, self._config.timeout_s, variable=variable, model=model
        )

    # --- structured generation -----------------------------------------------------------

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """A structured answer, validated against ``request.schema``."""
        model = self.model_for(request.tier)
        call = StructuredCall(
            request,
            partial(self._complete, model, request.tier),
            self._modes,
            base_url=self._config.base_url,
            server=self._config.server,
            model=model,
        )
        value = await call_with_retries(
            call.attempt, self._config.backoff, self._rng, operation=request.operation.value
        )
        return Generation(value=value, usage=call.usage(), model=model, quality=self.quality)

    async def _complete(
        self,
        model: str,
        tier: ModelTier,
        messages: list[ChatCompletionMessageParam],
        response_format: ResponseFormat | Omit,
    ) -> ChatCompletion:
        """One chat completion call for a structured answer."""
        with self._mapped_errors(self._variable(tier), model):
            return await self._client.chat.completions.create(
                model=model, messages=messages, temperature=0.2, response_format=response_format
            )

    # --- chat ----------------------------------------------------------------------------

    async def chat(self, request: ChatRequest) -> ChatAnswer:
        """A free-text reply to the conversation in ``request``."""
        model = self.model_for(request.tier)
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": chat_system_instruction(request)}
        ]
        for turn in request.turns:
            if turn.role == "model":
                messages.append({"role": "assistant", "content": turn.text})
            else:
                messages.append({"role": "user", "content": f"{turn.author}: {turn.text}"})
        if len(messages) == 1:
            messages.append({"role": "user", "content": "(no message)"})
        attempt = partial(self._chat_once, model, request.tier, messages)
        return await call_with_retries(attempt, self._config.backoff, self._rng, operation="chat")

    async def _chat_once(
        self, model: str, tier: ModelTier, messages: list[ChatCompletionMessageParam]
    ) -> ChatAnswer:
        """One chat completion call."""
        with self._mapped_errors(self._variable(tier), model):
            completion = await self._client.chat.completions.create(model=model, messages=messages)
        text = completion_text(completion, self._who(model))
        return ChatAnswer(
            text=text,
            usage=completion_usage(completion, messages),
            model=model,
            quality=self.quality,
        )

    # --- embeddings ----------------------------------------------------------------------

    async def embed(self, texts: Sequence[str], task: EmbeddingTask) -> list[list[float]]:
        """Normalised embeddings of ``texts``, in batches, after the task's prefix and a space.

        Blank texts are sent as ``"(empty)"``: some servers refuse empty input, and one blank
        text would otherwise fail its whole batch.
        """
        await anyio.lowlevel.checkpoint()
        config = self._config
        prefix = config.query_prefix if task is EmbeddingTask.QUERY else config.document_prefix
        prepared = [text if text.strip() else "(empty)" for text in texts]
        if prefix:
            prepared = [f"{prefix} {text}" for text in prepared]
        vectors: list[list[float]] = []
        for start in range(0, len(prepared), config.embed_batch_size):
            batch = prepared[start : start + config.embed_batch_size]
            attempt = partial(self._embed_once, batch)
            vectors.extend(
                await call_with_retries(attempt, config.backoff, self._rng, operation="embed")
            )
        return vectors

    async def _embed_once(self, batch: list[str]) -> list[list[float]]:
        """One embeddings call (again without ``dimensions`` if the server refuses it),
        checked and normalised."""
        while True:
            try:
                response = await self._embeddings(batch, self._dimensions_taken is not False)
            except _DimensionsRefused:
                self._dimensions_taken = False
                continue
            break
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(batch):
            raise LLMInvalidOutput(
                f"{self._who(self.embedding_model)} returned {len(data)} embeddings "
                f"for {len(batch)} texts"
            )
        vectors: list[list[float]] = []
        for item in data:
            values = item.embedding
            if len(values) != self.dimension:
                got = len(values)
                raise WrongDimension(
                    f"VIVY_OPENAI_EMBEDDING_DIMENSION={self.dimension} but "
                    f"{self._who(self.embedding_model)} returns {got}-dimensional vectors: "
                    f"set VIVY_OPENAI_EMBEDDING_DIMENSION={got} (and run `vivy reembed` if "
                    "notes exist), or choose a model of that dimension"
                )
            try:
                vectors.append(l2_normalise(values))
            except ValueError as error:
                raise LLMInvalidOutput(
                    f"{self._who(self.embedding_model)} returned an unusable embedding ({error})"
                ) from error
        return vectors

    async def _embeddings(self, batch: list[str], with_dimensions: bool) -> EmbeddingsAnswer:
        """The embeddings call; :class:`_DimensionsRefused` when ``dimensions`` was refused.

        The answer is read from its JSON by :class:`EmbeddingsAnswer`, not by the SDK's own models:
        those build each of a batch's numbers through generic Python code, several times the
        cost of the call itself."""
        dimensions: int | Omit = self.dimension if with_dimensions else omit
        try:
            with self._mapped_errors(_EMBEDDING_VARIABLE, self.embedding_model):
                raw = await self._client.embeddings.with_raw_response.create(
                    model=self.embedding_model,
                    input=batch,
                    encoding_format="float",
                    dimensions=dimensions,
                )
        except LLMError as error:
            answered = status_of(error)
            if (
                with_dimensions
                and answered is not None
                and answered[0] in (400, 422)
                and any(word in answered[1].lower() for word in ("dimension", "matryoshka"))
            ):
                raise _DimensionsRefused from error
            raise
        if with_dimensions:
            self._dimensions_taken = True
        return validated_json(
            raw.http_response.content, EmbeddingsAnswer, who=self._who(self.embedding_model)
        )

    # --- checks and lifetime -------------------------------------------------------------

    async def served_models(self) -> list[str] | None:
        """The model ids ``/models`` lists, or None when the server has no such list.

        Raises :class:`LLMUnavailable` when the server cannot be reached and
        :class:`LLMError` when it refuses the key.
        """
        try:
            with self._mapped_errors("VIVY_OPENAI_BASE_URL", ""):
                page = await self._client.models.list()
        except LLMError as error:
            answered = status_of(error)
            if answered is not None and answered[0] not in (401, 403):
                return None
            raise
        return [model.id async for model in page]

    async def aclose(self) -> None:
        """Close the httpx2 client if this object created it."""
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> OpenAILLM:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


#: What an OpenAI-compatible endpoint serves for Vivy.
Role = Literal["generation", "embeddings"]


def _served(model: str, ids: Sequence[str]) -> bool:
    """Whether ``model`` is among ``ids`` (Ollama lists ``name:latest`` for ``name``)."""
    return model in ids or f"{model}:latest" in ids


async def check_endpoint(
    config: OpenAIConfig,
    roles: Collection[Role],
    *,
    http_client: httpx2.AsyncClient | None = None,
) -> None:
    """Check once, before work starts, that the endpoint serves ``roles`` as configured.

    The server must answer, list the configured models (when it lists any), and, for
    embeddings, return vectors of the configured dimension. Each mistake raises a one-line
    :class:`~vivy.errors.ConfigError` naming the setting and the fix;
    :class:`EndpointUnreachable` when nothing answers at the URL.
    """
    once = replace(config, backoff=Backoff(base_s=0.0, cap_s=0.0, max_attempts=1))
    url = config.base_url
    async with OpenAILLM(once, http_client=http_client) as llm:
        try:
            ids = await llm.served_models()
        except LLMUnavailable as error:
            raise EndpointUnreachable(
                f"VIVY_OPENAI_BASE_URL={url} cannot be reached ({error}): start the server, "
                "or set VIVY_OPENAI_BASE_URL to where it listens"
            ) from error
        except LLMError as error:
            raise ConfigError(str(error)) from error
        if ids is None and not url.endswith("/v1"):
            raise ConfigError(
                f"VIVY_OPENAI_BASE_URL={url} has no /models list: OpenAI-compatible servers "
                f"answer under /v1 (for example {url}/v1)"
            )
        wanted: list[tuple[str, str]] = []
        if "generation" in roles:
            wanted += [(_FLASH_VARIABLE, config.flash_model), (_PRO_VARIABLE, config.pro_model)]
        if "embeddings" in roles:
            wanted.append((_EMBEDDING_VARIABLE, config.embedding_model))
        for variable, model in wanted:
            if ids is not None and not _served(model, ids):
                shown = ", ".join(ids[:8]) + (", ..." if len(ids) > 8 else "") or "nothing"
                raise ConfigError(
                    f"{variable}={model!r} is not served by {url} (it serves {shown}): pull "
                    f"it there (ollama pull {model}), or set {variable} to a model it serves"
                )
        if "embeddings" in roles:
            try:
                await llm.embed(["dimension check"], EmbeddingTask.DOCUMENT)
            except LLMError as error:
                raise ConfigError(str(error)) from error
