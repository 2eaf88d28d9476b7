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
  refuse them (JSON schema, then JSON mode, then the schema in the prompt), remembered per
  server and model for the process. An answer that fails its schema is retried once in the
  same conversation, quoting the validation error; the tokens of every attempt are metered.
* Embeddings ask for ``dimensions`` (OpenAI's models shorten to it) until a server refuses
  the parameter; a vector of another length than the configured dimension is an error
  naming ``VIVY_OPENAI_EMBEDDING_DIMENSION``, never a vector stored.
* SDK exceptions are translated at this boundary (:func:`_mapped_errors`) into one-line
  :class:`~vivy.errors.LLMError` s that name the setting to fix where one is at fault.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

import anyio.lowlevel
import httpx2
import openai
import pydantic
import structlog
from openai import Omit, omit
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from openai.types.chat.completion_create_params import ResponseFormat

from vivy.config import OPENAI_EMBEDDING_MODEL, OPENAI_FLASH_MODEL
from vivy.errors import (
    ConfigError,
    EndpointUnreachable,
    LLMError,
    LLMInvalidOutput,
    LLMUnavailable,
)
from vivy.llm.port import (
    ChatAnswer,
    ChatRequest,
    EmbeddingTask,
    Generation,
    GenerationRequest,
    ModelTier,
    T,
    Usage,
    l2_normalise,
)
from vivy.llm.prompts import chat_system_instruction
from vivy.llm.retry import Backoff, LLMRateLimited, call_with_retries, retry_after, retryable_status
from vivy.llm.structured import (
    SERVER_MODES,
    StructuredMode,
    StructuredModes,
    answer_text,
    estimate_tokens,
    find_json,
    is_format_refusal,
    parse_answer,
    repair_prompt,
    response_schema,
    schema_instruction,
)

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

_log = structlog.get_logger(__name__)


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


class _FormatRefused(Exception):
    """The server refused the request's ``response_format`` (not an error of the caller)."""


class _DimensionsRefused(Exception):
    """The server refused the embeddings request's ``dimensions`` parameter."""


def _detail(error: openai.APIStatusError) -> str:
    """The server's error message on one line, at most 200 characters."""
    body = error.body
    message: object = body
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message", inner) if isinstance(inner, dict) else inner
    text = " ".join(str(message if message is not None else error.message).split())
    return text[:200]


@contextmanager
def _mapped_errors(config: OpenAIConfig, *, variable: str, model: str) -> Iterator[None]:
    """Translate the SDK's exceptions for a call to ``model`` (named by ``variable``)."""
    server = config.server
    try:
        yield
    except openai.APITimeoutError as error:
        raise LLMUnavailable(f"{server} timed out after {config.timeout_s:g} s") from error
    except openai.APIConnectionError as error:
        cause = error.__cause__ or error
        raise LLMUnavailable(
            f"{server} unreachable ({type(cause).__name__}: {cause}); check "
            "VIVY_OPENAI_BASE_URL and that the server is running"
        ) from error
    except openai.APIStatusError as error:
        status = error.status_code
        detail = f"{server} answered HTTP {status}: {_detail(error)}"
        if status == 429:
            headers = dict(error.response.headers)
            raise LLMRateLimited(detail, retry_after_s=retry_after(headers, error.body)) from error
        if retryable_status(status):
            raise LLMUnavailable(detail) from error
        if status in (401, 403):
            raise LLMError(f"{detail}; set VIVY_OPENAI_API_KEY to a key it accepts") from error
        if status == 404:
            raise LLMError(
                f"{detail}; set {variable} to a model the server has (not {model!r}), "
                "or pull it there"
            ) from error
        raise LLMError(detail) from error
    except (openai.APIResponseValidationError, pydantic.ValidationError, ValueError) as error:
        raise LLMInvalidOutput(f"{server} sent an unreadable response ({error})") from error


@dataclass(slots=True)
class _Attempts:
    """What the attempts of one structured call share: the tokens spent and the repair."""

    spent: list[Usage] = field(default_factory=list)
    repaired: bool = False

    def usage(self) -> Usage:
        """The tokens of every attempt together."""
        return Usage(
            input_tokens=sum(u.input_tokens for u in self.spent),
            output_tokens=sum(u.output_tokens for u in self.spent),
        )


def _usage(completion: ChatCompletion, messages: Sequence[ChatCompletionMessageParam]) -> Usage:
    """The completion's token counts, estimated from the text when the server sent none."""
    reported = completion.usage
    if reported is not None and (reported.prompt_tokens or reported.completion_tokens):
        return Usage(reported.prompt_tokens or 0, reported.completion_tokens or 0)
    sent = sum(estimate_tokens(str(message.get("content") or "")) for message in messages)
    answer = completion.choices[0].message.content if completion.choices else None
    return Usage(sent, estimate_tokens(answer or ""))


def _message_text(completion: ChatCompletion, who: str) -> str:
    """The answer's text; :class:`LLMInvalidOutput` when refused, filtered, cut or empty."""
    if not completion.choices:
        raise LLMInvalidOutput(f"{who} returned no choices")
    choice = completion.choices[0]
    if choice.message.refusal:
        raise LLMInvalidOutput(f"{who} refused: {' '.join(choice.message.refusal.split())[:120]}")
    if choice.finish_reason == "content_filter":
        raise LLMInvalidOutput(f"{who} stopped the answer (content_filter)")
    text = answer_text(choice.message.content)
    if not text:
        raise LLMInvalidOutput(f"{who} returned an empty answer")
    return text


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
        self._schemas: dict[type[pydantic.BaseModel], dict[str, Any]] = {}

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

    # --- structured generation -----------------------------------------------------------

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """A structured answer, validated against ``request.schema``."""
        model = self.model_for(request.tier)
        attempts = _Attempts()
        attempt = partial(self._generate_once, model, request, attempts)
        value = await call_with_retries(
            attempt, self._config.backoff, self._rng, operation=request.operation.value
        )
        return Generation(value=value, usage=attempts.usage(), model=model, quality=self.quality)

    async def _generate_once(
        self, model: str, request: GenerationRequest[T], attempts: _Attempts
    ) -> T:
        """One attempt: the request in the server's mode, and on an answer that fails its
        schema, the first time, one follow-up quoting the error. A mode the server refuses
        (or ignores, answering prose) is left for the next one at once."""
        server = self._config.base_url
        mode = self._modes.mode(server, model)
        follow_up: list[ChatCompletionMessageParam] = []
        while True:
            messages = [*self._messages(request, mode), *follow_up]
            try:
                completion = await self._complete(model, request.tier, messages, mode, request)
            except _FormatRefused:
                mode = self._leave(server, model, mode, "refused")
                follow_up = []
                continue
            attempts.spent.append(_usage(completion, messages))
            text = _message_text(completion, self._who(model))
            try:
                return parse_answer(text, request.schema, who=self._who(model))
            except LLMInvalidOutput as error:
                ignored = (
                    mode is not StructuredMode.PROMPT
                    and not follow_up
                    and completion.choices[0].finish_reason != "length"
                    and find_json(text) is None
                )
                if ignored:
                    mode = self._leave(server, model, mode, "ignored")
                    continue
                if attempts.repaired:
                    raise
                attempts.repaired = True
                follow_up = [
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": repair_prompt(str(error))},
                ]

    def _leave(self, server: str, model: str, mode: StructuredMode, how: str) -> StructuredMode:
        """The next mode after ``mode`` was refused or ignored (logged once per change)."""
        looser = self._modes.refused(server, model, mode)
        if looser is None:
            raise LLMError(f"{self._who(model)} refused a request without response_format")
        _log.info(
            "structured_mode",
            server=self._config.server,
            model=model,
            left=mode.value,
            how=how,
            now=looser.value,
        )
        return looser

    def _messages(
        self, request: GenerationRequest[T], mode: StructuredMode
    ) -> list[ChatCompletionMessageParam]:
        """System and user messages for ``mode`` (the schema in the prompt unless enforced)."""
        system = request.system
        if mode is not StructuredMode.JSON_SCHEMA:
            system = f"{system}\n\n{schema_instruction(self._schema(request.schema))}"
        return [{"role": "system", "content": system}, {"role": "user", "content": request.prompt}]

    async def _complete(
        self,
        model: str,
        tier: ModelTier,
        messages: list[ChatCompletionMessageParam],
        mode: StructuredMode,
        request: GenerationRequest[T],
    ) -> ChatCompletion:
        """One chat completion call in ``mode``; :class:`_FormatRefused` when the server
        refuses the format."""
        response_format: ResponseFormat | Omit = omit
        if mode is StructuredMode.JSON_SCHEMA:
            response_format = {
                "type": "json_schema",
                "json_schema": {
                    "name": request.schema.__name__,
                    "schema": self._schema(request.schema),
                    "strict": False,
                },
            }
        elif mode is StructuredMode.JSON_OBJECT:
            response_format = {"type": "json_object"}
        try:
            with _mapped_errors(self._config, variable=self._variable(tier), model=model):
                return await self._client.chat.completions.create(
                    model=model, messages=messages, temperature=0.2, response_format=response_format
                )
        except LLMError as error:
            cause = error.__cause__
            if (
                mode is not StructuredMode.PROMPT
                and isinstance(cause, openai.APIStatusError)
                and is_format_refusal(cause.status_code, _detail(cause))
            ):
                raise _FormatRefused from error
            raise

    def _schema(self, schema: type[pydantic.BaseModel]) -> dict[str, Any]:
        """The plain JSON Schema of ``schema``, converted once and cached."""
        cached = self._schemas.get(schema)
        if cached is None:
            cached = self._schemas[schema] = response_schema(schema)
        return cached

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
        with _mapped_errors(self._config, variable=self._variable(tier), model=model):
            completion = await self._client.chat.completions.create(model=model, messages=messages)
        text = _message_text(completion, self._who(model))
        return ChatAnswer(
            text=text, usage=_usage(completion, messages), model=model, quality=self.quality
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
            if not isinstance(values, list) or len(values) != self.dimension:
                got = len(values) if isinstance(values, list) else 0
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

    async def _embeddings(
        self, batch: list[str], with_dimensions: bool
    ) -> openai.types.CreateEmbeddingResponse:
        """The embeddings call; :class:`_DimensionsRefused` when ``dimensions`` was refused."""
        dimensions: int | Omit = self.dimension if with_dimensions else omit
        try:
            with _mapped_errors(
                self._config, variable=_EMBEDDING_VARIABLE, model=self.embedding_model
            ):
                response = await self._client.embeddings.create(
                    model=self.embedding_model,
                    input=batch,
                    encoding_format="float",
                    dimensions=dimensions,
                )
        except LLMError as error:
            cause = error.__cause__
            if (
                with_dimensions
                and isinstance(cause, openai.APIStatusError)
                and cause.status_code in (400, 422)
                and any(word in _detail(cause).lower() for word in ("dimension", "matryoshka"))
            ):
                raise _DimensionsRefused from error
            raise
        if with_dimensions:
            self._dimensions_taken = True
        return response

    # --- checks and lifetime -------------------------------------------------------------

    async def served_models(self) -> list[str] | None:
        """The model ids ``/models`` lists, or None when the server has no such list.

        Raises :class:`LLMUnavailable` when the server cannot be reached and
        :class:`LLMError` when it refuses the key.
        """
        try:
            with _mapped_errors(self._config, variable="VIVY_OPENAI_BASE_URL", model=""):
                page = await self._client.models.list()
        except LLMError as error:
            cause = error.__cause__
            if isinstance(cause, openai.APIStatusError) and cause.status_code not in (401, 403):
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
