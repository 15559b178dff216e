"""Choosing a real model: the `+anthropic` spec, the settings, the missing-key message (before any case
runs), the HTTP agent's `?timeout=`, the demo server's model setting, and the label on every surface."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from agenttwin.cli import main
from evaluation.comparison import compare_case
from evaluation.grader import grade_case
from producers.agents.demo_agent import DemoAgent
from producers.agents.demo_server import DemoAgentServer, planner_from_settings
from producers.agents.errors import AgentSpecError
from producers.agents.http_agent import HttpAgent
from producers.agents.llm_planner import DEFAULT_LLM_MODEL, AnthropicPlannerFactory
from producers.agents.registry import check_agent_spec, resolve_agent
from producers.simulator import simulate_case, simulate_suite

from .conftest import TEST_KEY, TEST_MODEL, FakeMessagesApi, Reply, demo_scenario, demo_world, factory, final, tool_use

NO_KEY = "the anthropic model needs an API key: set ANTHROPIC_API_KEY"


def test_without_a_key_the_spec_fails_with_one_message_naming_the_variable() -> None:
    with pytest.raises(AgentSpecError) as failed:
        resolve_agent("demo:1.3.0+anthropic")
    assert str(failed.value).startswith(NO_KEY)
    with pytest.raises(AgentSpecError, match="ANTHROPIC_API_KEY"):
        check_agent_spec("demo:1.2.4+anthropic/claude-haiku-4-5")


def test_without_a_key_no_case_runs(capsys: pytest.CaptureFixture[str]) -> None:
    twin, scenarios = demo_world()
    with pytest.raises(AgentSpecError, match="ANTHROPIC_API_KEY"):
        simulate_suite("demo:1.3.0+anthropic", scenarios, twin, run_seed=42, run_id="r")
    assert main(["simulate", "--agent", "demo:1.3.0+anthropic", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip().splitlines() == [
        f"agenttwin: {NO_KEY} (or AGENTTWIN_AGENT_API_KEY); without one, use the scripted planner (demo:<version>)"
    ]


@pytest.mark.parametrize("variable", ["ANTHROPIC_API_KEY", "AGENTTWIN_AGENT_API_KEY"])
def test_a_key_selects_the_llm_planner(monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    monkeypatch.setenv(variable, TEST_KEY)
    agent = resolve_agent("demo:1.3.0+anthropic")
    assert isinstance(agent, DemoAgent)
    assert (agent.version, agent.model_kind) == ("1.3.0", "llm")
    assert isinstance(agent._planner, AnthropicPlannerFactory)
    assert agent._planner.model_name == DEFAULT_LLM_MODEL
    assert agent._planner.config.api_key == TEST_KEY and TEST_KEY not in repr(agent._planner.config)


def test_the_model_comes_from_the_spec_or_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    monkeypatch.setenv("AGENTTWIN_AGENT_LLM_MODEL", "claude-from-env")
    from_env = resolve_agent("demo:1.2.4+anthropic")
    from_spec = resolve_agent("demo:1.2.4+anthropic/claude-from-spec")
    assert isinstance(from_env, DemoAgent) and isinstance(from_spec, DemoAgent)
    assert from_env._planner is not None and from_env._planner.model_name == "claude-from-env"
    assert from_spec._planner is not None and from_spec._planner.model_name == "claude-from-spec"


def test_the_scripted_planner_stays_the_default_and_stays_labelled() -> None:
    agent = resolve_agent("demo:1.2.4")
    assert isinstance(agent, DemoAgent) and agent.model_kind == "deterministic-fake"
    twin, _ = demo_world()
    case = simulate_case(
        agent, demo_scenario("refund-happy-path"), twin, case_seed=1, case_id="c", agent_spec="demo:1.2.4"
    )
    assert case.model_kind == "deterministic-fake"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("demo:1.2.4+openai", re.escape("unknown model 'openai' after '+'")),
        ("demo:9.9.9+anthropic", "unknown demo agent version '9.9.9'"),
        ("http://127.0.0.1:1?timeout=0#1.2.4", "timeout must be a positive number"),
        ("http://127.0.0.1:1?timeout=soon", "timeout must be a positive number"),
        ("http://127.0.0.1:1?retries=2", "unknown query parameter 'retries'"),
    ],
)
def test_bad_specs(spec: str, message: str) -> None:
    with pytest.raises(AgentSpecError, match=message):
        resolve_agent(spec)


def test_http_agent_timeout_from_the_spec_or_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    pinned = resolve_agent("http://127.0.0.1:8090/agent?timeout=0.5#1.2.4")
    assert isinstance(pinned, HttpAgent)
    assert (pinned.url, pinned.pinned_version, pinned._timeout.read) == ("http://127.0.0.1:8090/agent", "1.2.4", 0.5)
    assert isinstance(default := resolve_agent("http://127.0.0.1:8090"), HttpAgent) and default._timeout.read == 120
    monkeypatch.setenv("AGENTTWIN_AGENT_HTTP_TIMEOUT_S", "7.5")
    configured = resolve_agent("http://127.0.0.1:8090")
    assert isinstance(configured, HttpAgent) and configured._timeout.read == 7.5


def test_demo_server_model_setting(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert planner_from_settings() is None
    monkeypatch.setenv("AGENTTWIN_DEMO_AGENT_MODEL", "anthropic")
    with pytest.raises(AgentSpecError, match="ANTHROPIC_API_KEY"):
        planner_from_settings()
    assert main(["demo-agent", "serve", "--port", "0"]) == 2  # fails before binding, with one line
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    planner = planner_from_settings()
    assert planner is not None and planner.kind == "llm"
    monkeypatch.delenv("AGENTTWIN_DEMO_AGENT_MODEL")
    monkeypatch.setenv("DEMO_AGENT_MODEL", "anthropic")  # the reference name works too
    assert planner_from_settings() is not None


@pytest.fixture
def llm_server(api: FakeMessagesApi) -> Iterator[DemoAgentServer]:
    with DemoAgentServer(planner=factory(api)) as server:
        yield server


def test_the_label_crosses_http_and_reaches_the_comparison(api: FakeMessagesApi, llm_server: DemoAgentServer) -> None:
    api.script(tool_use("lookup_order", {"order_id": "ORD-1001"}, "toolu_1"), final("Checked.\nOUTCOME: UNKNOWN"))
    twin, _ = demo_world()
    scenario = demo_scenario("refund-happy-path")
    with HttpAgent(f"{llm_server.url}", version="1.2.4") as agent:
        llm = simulate_case(agent, scenario, twin, case_seed=3, case_id="llm", agent_spec="http")
    assert llm.agent_finding is None
    assert llm.model_kind == "llm" and [r.tool for r in llm.records] == ["lookup_order"]
    scripted = simulate_case(resolve_agent("demo:1.2.4"), scenario, twin, case_seed=3, case_id="s", agent_spec="d")
    sides = compare_case(grade_case(scripted), grade_case(llm)).to_dict()
    assert (sides["baseline"]["model_kind"], sides["candidate"]["model_kind"]) == ("deterministic-fake", "llm")


def test_a_failing_model_behind_http_keeps_its_finding(api: FakeMessagesApi, llm_server: DemoAgentServer) -> None:
    api.script(Reply(final("slow").body, delay_s=2.0))
    llm_server.planner = factory(api, timeout_s=0.2)
    twin, _ = demo_world()
    with HttpAgent(llm_server.url, version="1.2.4") as agent:
        case = simulate_case(agent, demo_scenario("refund-happy-path"), twin, case_seed=3, case_id="t", agent_spec="h")
    assert case.agent_finding is not None and case.agent_finding.label == "AGENT_TIMEOUT"
    assert TEST_MODEL in case.agent_finding.message
    assert grade_case(case).verdict.status == "FAILED"


def test_a_bad_setting_is_one_line_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTTWIN_AGENT_HTTP_TIMEOUT_S", "soon")
    with pytest.raises(AgentSpecError, match=r"^agent setting AGENTTWIN_AGENT_HTTP_TIMEOUT_S: Input should be"):
        resolve_agent("http://127.0.0.1:8090")
    monkeypatch.setenv("AGENTTWIN_DEMO_AGENT_MODEL", "gpt")
    with pytest.raises(AgentSpecError, match=r"^agent setting AGENTTWIN_DEMO_AGENT_MODEL: "):
        planner_from_settings()
    monkeypatch.delenv("AGENTTWIN_DEMO_AGENT_MODEL")
    monkeypatch.delenv("AGENTTWIN_AGENT_HTTP_TIMEOUT_S")
    agent = resolve_agent(" demo: 1.2.4 ")
    assert isinstance(agent, DemoAgent) and agent.model_kind == "deterministic-fake"
