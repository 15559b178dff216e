"""Judge configuration: the one place the judge's environment variables are read, and judge selection.

AGENTTWIN_JUDGE_PROVIDER  fake (default) | anthropic | openai
AGENTTWIN_JUDGE_MODEL     model name (anthropic defaults to DEFAULT_ANTHROPIC_MODEL; openai needs one)
AGENTTWIN_JUDGE_BASE_URL  provider base URL (required for openai: any OpenAI-compatible endpoint)
AGENTTWIN_JUDGE_API_KEY   key for either provider; ANTHROPIC_API_KEY also works for anthropic
AGENTTWIN_JUDGE_TIMEOUT_S, AGENTTWIN_JUDGE_MAX_RETRIES, AGENTTWIN_JUDGE_SEMANTIC_TIMEOUT_S,
AGENTTWIN_JUDGE_MAX_CALLS, AGENTTWIN_JUDGE_MAX_COST_USD,
AGENTTWIN_JUDGE_PRICE_INPUT_PER_MTOK, AGENTTWIN_JUDGE_PRICE_OUTPUT_PER_MTOK (both, or cost stays unknown)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from evaluation.judges._limits import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_S, Sleep
from evaluation.judges.budget import DEFAULT_MAX_CALLS, DEFAULT_MAX_COST_USD, JudgeBudget
from evaluation.judges.calling import DEFAULT_SEMANTIC_TIMEOUT_S
from evaluation.judges.contract import Judge
from evaluation.judges.errors import JudgeConfigError
from evaluation.judges.fake import OfflineJudge
from evaluation.judges.pricing import Prices

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-5"


class JudgeSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AGENTTWIN_JUDGE_", extra="ignore", populate_by_name=True)

    provider: Literal["fake", "anthropic", "openai"] = "fake"
    model: str | None = None
    base_url: str | None = None
    api_key: SecretStr | None = None
    anthropic_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("ANTHROPIC_API_KEY", "anthropic_api_key")
    )
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0)
    max_retries: int = Field(default=DEFAULT_MAX_RETRIES, ge=0, le=10)
    semantic_timeout_s: float = Field(default=DEFAULT_SEMANTIC_TIMEOUT_S, gt=0)
    max_calls: int = Field(default=DEFAULT_MAX_CALLS, ge=0)
    max_cost_usd: float = Field(default=DEFAULT_MAX_COST_USD, ge=0)
    price_input_per_mtok: float | None = Field(default=None, ge=0)
    price_output_per_mtok: float | None = Field(default=None, ge=0)

    def prices(self) -> Prices | None:
        if self.price_input_per_mtok is None or self.price_output_per_mtok is None:
            return None
        return Prices(self.price_input_per_mtok, self.price_output_per_mtok)

    def budget(self) -> JudgeBudget:
        return JudgeBudget(max_cost_usd=self.max_cost_usd, max_calls=self.max_calls)


def _secret(value: SecretStr | None) -> str | None:
    raw = value.get_secret_value().strip() if value is not None else ""
    return raw or None


def judge_from_settings(settings: JudgeSettings, *, sleep: Sleep = time.sleep) -> Judge:
    """The configured judge; JudgeConfigError says exactly what is missing for a real provider."""
    if settings.provider == "fake":
        return OfflineJudge()
    if settings.provider == "anthropic":
        key = _secret(settings.api_key) or _secret(settings.anthropic_api_key)
        if key is None:
            raise JudgeConfigError(
                "The anthropic judge needs an API key: set AGENTTWIN_JUDGE_API_KEY or ANTHROPIC_API_KEY "
                "(or AGENTTWIN_JUDGE_PROVIDER=fake for the deterministic, non-LLM judge)."
            )
        from evaluation.judges.anthropic import AnthropicJudge  # the SDK loads only when this judge is used

        make: Callable[..., Judge] = AnthropicJudge
        model = settings.model or DEFAULT_ANTHROPIC_MODEL
    else:
        key = _secret(settings.api_key)
        missing = [
            name
            for name, value in (
                ("AGENTTWIN_JUDGE_API_KEY", key),
                ("AGENTTWIN_JUDGE_BASE_URL", settings.base_url),
                ("AGENTTWIN_JUDGE_MODEL", settings.model),
            )
            if not value
        ]
        if missing or key is None or settings.base_url is None or settings.model is None:
            raise JudgeConfigError(f"The openai judge needs {', '.join(missing)} to be set.")
        from evaluation.judges.openai_compat import OpenAICompatibleJudge

        make, model = OpenAICompatibleJudge, settings.model
    return make(
        model=model,
        api_key=key,
        base_url=settings.base_url,
        timeout_s=settings.timeout_s,
        max_retries=settings.max_retries,
        prices=settings.prices(),
        sleep=sleep,
    )
