"""Where the ``openai`` SDK meets Vivy: its exceptions translated, its completions read.

Every call an OpenAI-compatible client makes runs inside :func:`mapped_errors`, so nothing
past this module sees an SDK exception: a time-out or an unreachable server is a retryable
:class:`~vivy.errors.LLMUnavailable`, a 429 an :class:`~vivy.llm.retry.LLMRateLimited` with
the wait it asked for, and a refusal a one-line :class:`~vivy.errors.LLMError` naming the
setting to fix. The SDK exception stays the error's ``__cause__`` for callers that read the
server's status (a refused ``response_format`` or ``dimensions``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import openai
import pydantic
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam

from vivy.errors import LLMError, LLMInvalidOutput, LLMUnavailable
from vivy.llm.port import Usage
from vivy.llm.retry import LLMRateLimited, retry_after, retryable_status
from vivy.llm.structured import answer_text, estimate_tokens

__all__ = ["completion_text", "completion_usage", "error_detail", "mapped_errors", "status_of"]


def error_detail(error: openai.APIStatusError) -> str:
    """The server's error message on one line, at most 200 characters."""
    body = error.body
    message: object = body
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message", inner) if isinstance(inner, dict) else inner
    text = " ".join(str(message if message is not None else error.message).split())
    return text[:200]


def status_of(error: LLMError) -> tuple[int, str] | None:
    """The HTTP status and message of the server's answer behind ``error``, or None when
    the error did not come from an answer (time-out, connection, unreadable response)."""
    cause = error.__cause__
    if isinstance(cause, openai.APIStatusError):
        return cause.status_code, error_detail(cause)
    return None


@contextmanager
def mapped_errors(server: str, timeout_s: float, *, variable: str, model: str) -> Iterator[None]:
    """Translate the SDK's exceptions for a call to ``model`` (named by the setting
    ``variable``) at ``server``, whose attempts last at most ``timeout_s``."""
    try:
        yield
    except openai.APITimeoutError as error:
        raise LLMUnavailable(f"{server} timed out after {timeout_s:g} s") from error
    except openai.APIConnectionError as error:
        cause = error.__cause__ or error
        raise LLMUnavailable(
            f"{server} unreachable ({type(cause).__name__}: {cause}); check "
            "VIVY_OPENAI_BASE_URL and that the server is running"
        ) from error
    except openai.APIStatusError as error:
        status = error.status_code
        detail = f"{server} answered HTTP {status}: {error_detail(error)}"
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


def completion_usage(
    completion: ChatCompletion, messages: Sequence[ChatCompletionMessageParam]
) -> Usage:
    """The completion's token counts, estimated from the text when the server sent none."""
    reported = completion.usage
    if reported is not None and (reported.prompt_tokens or reported.completion_tokens):
        return Usage(reported.prompt_tokens or 0, reported.completion_tokens or 0)
    sent = sum(estimate_tokens(str(message.get("content") or "")) for message in messages)
    answer = completion.choices[0].message.content if completion.choices else None
    return Usage(sent, estimate_tokens(answer or ""))


def completion_text(completion: ChatCompletion, who: str) -> str:
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
