"""Judge adapter for the Anthropic Messages API: one forced `record_verdict` tool call per verdict.

The SDK's own retries are off; `_transport.with_retries` decides, so every failure maps to one
JudgeError kind and the backoff can be tested without sleeping.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anthropic as sdk
import httpx
from anthropic.types import MessageParam, ToolChoiceToolParam, ToolParam

from evaluation.judges._transport import (
    MAX_OUTPUT_TOKENS,
    TEMPERATURE,
    error_for_status,
    shared_ssl_context,
    with_retries,
)
from evaluation.judges.contract import JudgeRequest, JudgeVerdict
from evaluation.judges.errors import MALFORMED, REFUSED, TIMEOUT, UNAVAILABLE, JudgeError
from evaluation.judges.prompt import SYSTEM_PROMPT, provider_schema, render_prompt
from evaluation.judges.provider_judge import ProviderJudge
from evaluation.judges.verdicts import parse_verdict

PROVIDER = "anthropic"
TOOL_NAME = "record_verdict"
_TOOL: ToolParam = {
    "name": TOOL_NAME,
    "description": "Record the grading verdict for the answer.",
    "input_schema": provider_schema(),
}


def open_client(api_key: str, base_url: str | None, timeout_s: float) -> sdk.Anthropic:
    """A Messages API client with the SDK's retries off (with_retries decides) and the shared TLS context."""
    return sdk.Anthropic(
        api_key=api_key,
        base_url=base_url,
        timeout=timeout_s,
        max_retries=0,
        http_client=sdk.DefaultHttpxClient(verify=shared_ssl_context()),
    )


@contextmanager
def provider_errors(timeout_s: float) -> Iterator[None]:
    """Anthropic SDK failures as JudgeErrors (the judge and the LLM planner map them the same way)."""
    try:
        yield
    except sdk.APITimeoutError as exc:
        raise JudgeError(TIMEOUT, f"no answer within {timeout_s:g} s", retryable=True) from exc
    except sdk.APIConnectionError as exc:
        raise JudgeError(UNAVAILABLE, f"cannot reach the provider: {exc}", retryable=True) from exc
    except sdk.APIStatusError as exc:
        raise error_for_status(exc.status_code, exc.response.headers, exc.response.text) from exc
    except (sdk.APIResponseValidationError, ValueError, httpx.DecodingError) as exc:
        raise JudgeError(MALFORMED, f"unreadable provider response: {exc}") from exc


def forced_tool_call(
    client: sdk.Anthropic,
    tool: ToolParam,
    *,
    model: str,
    system: str,
    text: str,
    max_tokens: int,
    temperature: float,
    timeout_s: float,
) -> object:
    """One Messages call whose answer must come through `tool` (the judge's verdict, the claim classifier's
    reading); failures as JudgeErrors. The caller checks the answer's shape: the SDK does not."""
    messages: list[MessageParam] = [{"role": "user", "content": text}]
    choice: ToolChoiceToolParam = {"type": "tool", "name": tool["name"]}
    with provider_errors(timeout_s):
        return client.messages.create(
            model=model,
            max_tokens=max_tokens,
            temperature=temperature,
            system=system,
            messages=messages,
            tools=[tool],
            tool_choice=choice,
        )


class AnthropicJudge(ProviderJudge):
    provider = PROVIDER

    def judge(self, request: JudgeRequest) -> JudgeVerdict:
        with open_client(self._api_key, self._base_url, self._timeout_s) as client:
            return with_retries(
                lambda: self._attempt(client, request), max_retries=self._max_retries, sleep=self._sleep
            )

    def _attempt(self, client: sdk.Anthropic, request: JudgeRequest) -> JudgeVerdict:
        message = forced_tool_call(
            client,
            _TOOL,
            model=self._identity.model,
            system=SYSTEM_PROMPT,
            text=render_prompt(request),
            max_tokens=MAX_OUTPUT_TOKENS,
            temperature=TEMPERATURE,
            timeout_s=self._timeout_s,
        )
        return self._verdict(message, request)

    def _verdict(self, message: Any, request: JudgeRequest) -> JudgeVerdict:
        # The SDK does not validate response shapes strictly, so anything odd is checked here.
        if not isinstance(message, sdk.types.Message) or not isinstance(message.content, list):
            kind = type(message).__name__
            raise JudgeError(MALFORMED, f"the provider answered with a {kind} that is not a message")
        if message.stop_reason == "refusal":
            raise JudgeError(REFUSED, "the model declined to grade")
        if message.stop_reason == "max_tokens":
            raise JudgeError(MALFORMED, "the verdict was cut off at the output token limit")
        calls = [
            b
            for b in message.content
            if getattr(b, "type", None) == "tool_use" and getattr(b, "name", None) == TOOL_NAME
        ]
        if not calls:
            raise JudgeError(REFUSED, "the model answered without recording a verdict")
        tokens_in = getattr(message.usage, "input_tokens", None)
        tokens_out = getattr(message.usage, "output_tokens", None)
        if isinstance(tokens_in, int) and isinstance(tokens_out, int):
            tokens: int | None = tokens_in + tokens_out
            cost = self._prices.cost(tokens_in, tokens_out) if self._prices else None
        else:
            tokens, cost = None, None
        return parse_verdict(getattr(calls[0], "input", None), request, tokens=tokens, cost_usd=cost)
