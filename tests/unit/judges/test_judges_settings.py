"""Judge selection by configuration: one settings class, secrets hidden, clear errors for missing keys."""

from __future__ import annotations

import pytest

from evaluation.judges import JudgeConfigError, JudgeSettings, KeywordOverlapJudge, judge_from_settings
from evaluation.judges.anthropic import AnthropicJudge
from evaluation.judges.openai_compat import OpenAICompatibleJudge

ENV = (
    "AGENTTWIN_JUDGE_PROVIDER",
    "AGENTTWIN_JUDGE_MODEL",
    "AGENTTWIN_JUDGE_BASE_URL",
    "AGENTTWIN_JUDGE_API_KEY",
    "ANTHROPIC_API_KEY",
    "AGENTTWIN_JUDGE_PRICE_INPUT_PER_MTOK",
    "AGENTTWIN_JUDGE_PRICE_OUTPUT_PER_MTOK",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


def test_default_is_the_fake() -> None:
    settings = JudgeSettings()
    assert settings.provider == "fake"
    assert isinstance(judge_from_settings(settings), KeywordOverlapJudge)
    budget = settings.budget()
    assert (budget.max_calls, budget.max_cost_usd) == (200, 5.0)
    assert settings.semantic_timeout_s == 120.0


def test_anthropic_without_key_says_which_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTTWIN_JUDGE_PROVIDER", "anthropic")
    with pytest.raises(JudgeConfigError, match="AGENTTWIN_JUDGE_API_KEY or ANTHROPIC_API_KEY"):
        judge_from_settings(JudgeSettings())


def test_anthropic_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTTWIN_JUDGE_PROVIDER", "anthropic")
    monkeypatch.setenv("AGENTTWIN_JUDGE_MODEL", "claude-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    settings = JudgeSettings()
    judge = judge_from_settings(settings)
    assert isinstance(judge, AnthropicJudge)
    assert (judge.identity.provider, judge.identity.model, judge.identity.kind) == (
        "anthropic",
        "claude-test",
        "llm",
    )
    assert "sk-ant-secret" not in repr(settings)
    assert "sk-ant-secret" not in str(settings)


def test_openai_needs_key_url_and_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTTWIN_JUDGE_PROVIDER", "openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "not-for-openai")
    with pytest.raises(JudgeConfigError) as caught:
        judge_from_settings(JudgeSettings())
    message = str(caught.value)
    for name in ("AGENTTWIN_JUDGE_API_KEY", "AGENTTWIN_JUDGE_BASE_URL", "AGENTTWIN_JUDGE_MODEL"):
        assert name in message


def test_openai_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTTWIN_JUDGE_PROVIDER", "openai")
    monkeypatch.setenv("AGENTTWIN_JUDGE_MODEL", "local-model")
    monkeypatch.setenv("AGENTTWIN_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("AGENTTWIN_JUDGE_API_KEY", "secret-key")
    settings = JudgeSettings()
    judge = judge_from_settings(settings)
    assert isinstance(judge, OpenAICompatibleJudge)
    assert judge.identity.provider == "openai"
    assert "secret-key" not in repr(settings)


def test_prices_need_both_halves() -> None:
    assert JudgeSettings(price_input_per_mtok=3.0).prices() is None
    prices = JudgeSettings(price_input_per_mtok=3.0, price_output_per_mtok=15.0).prices()
    assert prices is not None
    assert prices.cost(1_000_000, 0) == 3.0


def test_unknown_provider_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTTWIN_JUDGE_PROVIDER", "gpt-oracle")
    with pytest.raises(ValueError, match="provider"):
        JudgeSettings()
