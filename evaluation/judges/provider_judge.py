"""What every model-backed judge holds: who it is, where it calls, how long it waits, how often it retries,
what a token costs. One definition for the Anthropic and the OpenAI-compatible adapters."""

from __future__ import annotations

import time

from evaluation.judges._transport import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_S, Sleep
from evaluation.judges.contract import KIND_LLM, PROMPT_VERSION, JudgeIdentity
from evaluation.judges.pricing import Prices
from evaluation.judges.prompt import PROMPT_SHA256


class ProviderJudge:
    provider = ""  # each adapter names its provider

    def __init__(
        self,
        *,
        prices: Prices | None = None,
        model: str,
        api_key: str,
        base_url: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        sleep: Sleep = time.sleep,
    ) -> None:
        self._identity = JudgeIdentity(
            provider=self.provider,
            model=model,
            kind=KIND_LLM,
            prompt_version=PROMPT_VERSION,
            prompt_sha256=PROMPT_SHA256,
        )
        self._api_key, self._base_url = api_key, base_url
        self._timeout_s, self._max_retries, self._prices, self._sleep = timeout_s, max_retries, prices, sleep

    @property
    def identity(self) -> JudgeIdentity:
        return self._identity
