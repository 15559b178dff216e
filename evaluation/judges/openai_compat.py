"""Judge adapter for any OpenAI-compatible chat-completions endpoint (strict json_schema output, seed 7)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from evaluation.judges._transport import (
    MAX_OUTPUT_TOKENS,
    SEED,
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

PROVIDER = "openai"
SCHEMA_NAME = "record_verdict"


def _response_format() -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": SCHEMA_NAME, "strict": True, "schema": provider_schema()},
    }


class OpenAICompatibleJudge(ProviderJudge):
    provider = PROVIDER

    def __init__(self, *, base_url: str, **options: Any) -> None:
        super().__init__(base_url=base_url, **options)
        self._url = base_url.rstrip("/") + "/chat/completions"

    def judge(self, request: JudgeRequest) -> JudgeVerdict:
        body = {
            "model": self._identity.model,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": render_prompt(request)},
            ],
            "temperature": TEMPERATURE,
            "seed": SEED,
            "max_tokens": MAX_OUTPUT_TOKENS,
            "response_format": _response_format(),
        }
        headers = {"Authorization": f"Bearer {self._api_key}"}
        with httpx.Client(timeout=self._timeout_s, headers=headers, verify=shared_ssl_context()) as client:
            return with_retries(
                lambda: self._attempt(client, body, request), max_retries=self._max_retries, sleep=self._sleep
            )

    def _attempt(self, client: httpx.Client, body: dict[str, Any], request: JudgeRequest) -> JudgeVerdict:
        try:
            response = client.post(self._url, json=body)
        except httpx.TimeoutException as exc:
            raise JudgeError(TIMEOUT, f"no answer within {self._timeout_s:g} s", retryable=True) from exc
        except httpx.TransportError as exc:
            raise JudgeError(UNAVAILABLE, f"cannot reach the provider: {exc}", retryable=True) from exc
        if not 200 <= response.status_code < 300:
            raise error_for_status(response.status_code, response.headers, response.text)
        try:
            data = response.json()
        except ValueError as exc:
            raise JudgeError(MALFORMED, "the provider's response is not JSON") from exc
        return self._verdict(data, request)

    def _verdict(self, data: Any, request: JudgeRequest) -> JudgeVerdict:
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise JudgeError(MALFORMED, "the response has no choices")
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            raise JudgeError(MALFORMED, "the first choice has no message")
        if message.get("refusal") or choice.get("finish_reason") == "content_filter":
            raise JudgeError(REFUSED, f"the model declined to grade: {message.get('refusal') or 'filtered'}")
        if choice.get("finish_reason") == "length":
            raise JudgeError(MALFORMED, "the verdict was cut off at the output token limit")
        content = message.get("content")
        if not isinstance(content, str) or not content.strip():
            raise JudgeError(REFUSED, "the model answered without a verdict")
        try:
            payload = json.loads(content)
        except ValueError as exc:
            raise JudgeError(MALFORMED, "the verdict is not JSON") from exc
        tokens, cost = self._usage(data.get("usage"))
        return parse_verdict(payload, request, tokens=tokens, cost_usd=cost)

    def _usage(self, usage: Any) -> tuple[int | None, float | None]:
        if not isinstance(usage, dict):
            return None, None
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if not (isinstance(prompt, int) and isinstance(completion, int)):
            return None, None
        cost = self._prices.cost(prompt, completion) if self._prices else None
        return prompt + completion, cost
