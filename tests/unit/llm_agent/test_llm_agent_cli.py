"""`demo:<version>+anthropic` through the CLI against the local Messages API: the `llm` label reaches the
simulate JSON and both sides of the evaluate report (which runs through the embedded event pipeline)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agenttwin.cli import main

from .conftest import TEST_KEY, TEST_MODEL, FakeMessagesApi, final

SCENARIOS = 9
ANSWER = "I've passed this to a specialist.\nOUTCOME: PARTIAL\nBUSINESS_OUTCOME: HANDED_OVER"


@pytest.fixture
def anthropic_env(monkeypatch: pytest.MonkeyPatch, api: FakeMessagesApi) -> FakeMessagesApi:
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    monkeypatch.setenv("AGENTTWIN_AGENT_BASE_URL", api.url)
    monkeypatch.setenv("AGENTTWIN_AGENT_LLM_MODEL", TEST_MODEL)
    monkeypatch.setenv("AGENTTWIN_AGENT_LLM_MAX_RETRIES", "0")
    return api


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def test_simulate_json_is_labelled_llm(capsys: pytest.CaptureFixture[str], anthropic_env: FakeMessagesApi) -> None:
    anthropic_env.script(*[final(ANSWER)] * SCENARIOS)
    cases = cli_json(capsys, "simulate", "--agent", "demo:1.2.4+anthropic", "--suite", "demo", "--json")
    assert len(cases) == SCENARIOS and len(anthropic_env.seen) == SCENARIOS
    for case in cases:
        assert case["agent"] == "demo:1.2.4+anthropic" and case["agent_version"] == "1.2.4"
        assert case["model_kind"] == "llm" and case["agent_finding"] is None
        assert (case["claimed_outcome"], case["business_outcome"]) == ("PARTIAL", "HANDED_OVER")
        assert case["reply"] == "I've passed this to a specialist."
    assert {seen.body["model"] for seen in anthropic_env.seen} == {TEST_MODEL}


def test_evaluate_report_shows_each_sides_model_kind(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, anthropic_env: FakeMessagesApi
) -> None:
    anthropic_env.script(*[final(ANSWER)] * SCENARIOS)
    doc = cli_json(
        capsys,
        "evaluate",
        "--baseline",
        "demo:1.2.4",
        "--candidate",
        "demo:1.2.4+anthropic",
        "--json",
        "--data-dir",
        str(tmp_path),
    )
    assert len(doc["cases"]) == SCENARIOS
    for case in doc["cases"]:
        assert (case["baseline"]["model_kind"], case["candidate"]["model_kind"]) == ("deterministic-fake", "llm")
        assert case["candidate"]["agent"] == "demo:1.2.4+anthropic"
