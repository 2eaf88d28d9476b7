"""Structured answers over chat completions, in the mode each server takes.

A call asks first in the mode remembered for its server and model
(:class:`~vivy.llm.structured.StructuredModes`): JSON schema, then JSON mode, then the
schema in the prompt. A mode the server refuses (an error about ``response_format``) or
ignores (prose without any JSON) is left at once, within the same attempt, and the server
is asked in the next one. An answer that fails its schema is followed, once per call, by a
request that quotes it and the validation error. The tokens of every attempt are counted.
Retrying a failed attempt, and making the HTTP call, are the client's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Generic

import pydantic
import structlog
from openai import Omit, omit
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from openai.types.chat.completion_create_params import ResponseFormat

from vivy.errors import LLMError, LLMInvalidOutput
from vivy.llm.openai_sdk import completion_text, completion_usage, status_of
from vivy.llm.port import GenerationRequest, T, Usage
from vivy.llm.structured import (
    StructuredMode,
    StructuredModes,
    find_json,
    is_format_refusal,
    parse_answer,
    repair_prompt,
    response_schema,
    schema_instruction,
)

__all__ = ["SendChat", "StructuredCall", "response_format"]

#: One chat completion call with these messages and this ``response_format``; SDK errors
#: arrive translated by :func:`~vivy.llm.openai_sdk.mapped_errors`.
SendChat = Callable[
    [list[ChatCompletionMessageParam], ResponseFormat | Omit], Awaitable[ChatCompletion]
]

_log = structlog.get_logger(__name__)


@cache
def _plain_schema(schema: type[pydantic.BaseModel]) -> dict[str, Any]:
    """The plain JSON Schema of ``schema``, converted once a process."""
    return response_schema(schema)


def response_format(
    mode: StructuredMode, schema: type[pydantic.BaseModel]
) -> ResponseFormat | Omit:
    """What a request in ``mode`` sends as ``response_format`` (nothing in prompt mode)."""
    if mode is StructuredMode.JSON_SCHEMA:
        return {
            "type": "json_schema",
            "json_schema": {
                "name": schema.__name__,
                "schema": _plain_schema(schema),
                "strict": False,
            },
        }
    if mode is StructuredMode.JSON_OBJECT:
        return {"type": "json_object"}
    return omit


@dataclass(slots=True)
class StructuredCall(Generic[T]):
    """One structured generation by ``model`` at one server, across its retried attempts.

    ``base_url`` is the key the learned mode is kept under and ``server`` the endpoint as
    logs and errors name it. Each :meth:`attempt` may send several requests; :meth:`usage`
    counts them all.
    """

    request: GenerationRequest[T]
    send: SendChat
    modes: StructuredModes
    base_url: str
    server: str
    model: str
    spent: list[Usage] = field(default_factory=list)
    #: Whether the one quoting retry of this call was used.
    repaired: bool = False

    @property
    def who(self) -> str:
        """The model and server as errors name them."""
        return f"{self.model} at {self.server}"

    def usage(self) -> Usage:
        """The tokens of every request so far together."""
        return Usage(
            input_tokens=sum(u.input_tokens for u in self.spent),
            output_tokens=sum(u.output_tokens for u in self.spent),
        )

    async def attempt(self) -> T:
        """One attempt: the request in the server's mode, and on an answer that fails its
        schema, the first time, one follow-up quoting the error. A mode the server refuses
        (or ignores, answering prose) is left for the next one at once."""
        mode = self.modes.mode(self.base_url, self.model)
        follow_up: list[ChatCompletionMessageParam] = []
        while True:
            messages = [*self._messages(mode), *follow_up]
            completion = await self._ask(messages, mode)
            if completion is None:
                mode = self._leave(mode, "refused")
                follow_up = []
                continue
            self.spent.append(completion_usage(completion, messages))
            text = completion_text(completion, self.who)
            try:
                return parse_answer(text, self.request.schema, who=self.who)
            except LLMInvalidOutput as error:
                ignored = (
                    mode is not StructuredMode.PROMPT
                    and not follow_up
                    and completion.choices[0].finish_reason != "length"
                    and find_json(text) is None
                )
                if ignored:
                    mode = self._leave(mode, "ignored")
                    continue
                if self.repaired:
                    raise
                self.repaired = True
                follow_up = [
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": repair_prompt(str(error))},
                ]

    async def _ask(
        self, messages: list[ChatCompletionMessageParam], mode: StructuredMode
    ) -> ChatCompletion | None:
        """The completion of ``messages`` in ``mode``; None when the server refuses the format."""
        try:
            return await self.send(messages, response_format(mode, self.request.schema))
        except LLMError as error:
            answered = status_of(error)
            if (
                mode is not StructuredMode.PROMPT
                and answered is not None
                and is_format_refusal(*answered)
            ):
                return None
            raise

    def _leave(self, mode: StructuredMode, how: str) -> StructuredMode:
        """The next mode after ``mode`` was refused or ignored (logged once per change)."""
        looser = self.modes.refused(self.base_url, self.model, mode)
        if looser is None:
            raise LLMError(f"{self.who} refused a request without response_format")
        _log.info(
            "structured_mode",
            server=self.server,
            model=self.model,
            left=mode.value,
            how=how,
            now=looser.value,
        )
        return looser

    def _messages(self, mode: StructuredMode) -> list[ChatCompletionMessageParam]:
        """System and user messages for ``mode`` (the schema in the prompt unless enforced)."""
        system = self.request.system
        if mode is not StructuredMode.JSON_SCHEMA:
            system = f"{system}\n\n{schema_instruction(_plain_schema(self.request.schema))}"
        return [
            {"role": "system", "content": system},
            {"role": "user", "content": self.request.prompt},
        ]
