"""Agent settings: the one place the agent adapters' environment variables are read.

AGENTTWIN_DEMO_AGENT_MODEL   scripted (default) | anthropic: the model behind `agenttwin demo-agent serve`
                             (DEMO_AGENT_MODEL, the reference name, also works)
AGENTTWIN_AGENT_LLM_MODEL    the Anthropic model a `+anthropic` demo agent uses (default DEFAULT_LLM_MODEL)
AGENTTWIN_AGENT_API_KEY      key for it; ANTHROPIC_API_KEY also works
AGENTTWIN_AGENT_BASE_URL     Messages API base URL (default: the SDK's)
AGENTTWIN_AGENT_LLM_TIMEOUT_S, AGENTTWIN_AGENT_LLM_MAX_RETRIES   per model call
AGENTTWIN_AGENT_HTTP_TIMEOUT_S   how long an http(s):// agent may take per case (default 120; a spec's
                                 `?timeout=` wins)
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from producers.agents.errors import AgentSpecError
from producers.agents.http_agent import DEFAULT_AGENT_TIMEOUT_S
from producers.agents.llm_planner import (
    DEFAULT_LLM_MAX_RETRIES,
    DEFAULT_LLM_MODEL,
    DEFAULT_LLM_TIMEOUT_S,
    AnthropicConfig,
)

SCRIPTED = "scripted"
ANTHROPIC = "anthropic"
KEY_VARIABLE = "ANTHROPIC_API_KEY"


class AgentSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AGENTTWIN_AGENT_", extra="ignore", populate_by_name=True)

    demo_agent_model: Literal["scripted", "anthropic"] = Field(
        default="scripted",
        validation_alias=AliasChoices("AGENTTWIN_DEMO_AGENT_MODEL", "DEMO_AGENT_MODEL", "demo_agent_model"),
    )
    llm_model: str = DEFAULT_LLM_MODEL
    api_key: SecretStr | None = None
    anthropic_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("ANTHROPIC_API_KEY", "anthropic_api_key")
    )
    base_url: str | None = None
    llm_timeout_s: float = Field(default=DEFAULT_LLM_TIMEOUT_S, gt=0)
    llm_max_retries: int = Field(default=DEFAULT_LLM_MAX_RETRIES, ge=0, le=10)
    http_timeout_s: float = Field(default=DEFAULT_AGENT_TIMEOUT_S, gt=0)

    def anthropic_config(self, model: str | None = None) -> AnthropicConfig:
        """The Anthropic model's configuration; no key raises AgentSpecError naming the variable."""
        key = _secret(self.api_key) or _secret(self.anthropic_api_key)
        if key is None:
            raise AgentSpecError(
                f"the anthropic model needs an API key: set {KEY_VARIABLE} (or AGENTTWIN_AGENT_API_KEY); "
                "without one, use the scripted planner (demo:<version>)"
            )
        return AnthropicConfig(
            model=model or self.llm_model,
            api_key=key,
            base_url=self.base_url or None,
            timeout_s=self.llm_timeout_s,
            max_retries=self.llm_max_retries,
        )


def _secret(value: SecretStr | None) -> str | None:
    raw = value.get_secret_value().strip() if value is not None else ""
    return raw or None


def load_agent_settings() -> AgentSettings:
    """The settings from the environment; a bad value is an AgentSpecError naming the variable."""
    try:
        return AgentSettings()
    except ValidationError as exc:
        first = exc.errors()[0]
        field_name = ".".join(str(part) for part in first["loc"])
        # aliased fields are reported under the variable's own name already
        variable = field_name if field_name.isupper() else f"AGENTTWIN_AGENT_{field_name.upper()}"
        raise AgentSpecError(f"agent setting {variable}: {first['msg']}") from None


__all__ = ["ANTHROPIC", "KEY_VARIABLE", "SCRIPTED", "AgentSettings", "load_agent_settings"]
