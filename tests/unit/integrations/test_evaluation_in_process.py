"""The adapters' in-process face (`agent(...)`, for a `python:module:attr` spec) and their /run server's
edges: preflight, pinned versions, bad requests, a run that raises."""

from __future__ import annotations

import importlib
from typing import Any

import httpx
import pytest

from agenttwin.demo import TWIN_FILE
from agenttwin.integrations._evaluation import AgentServer, Case, Outcome
from producers.simulator import simulate_case
from twin_engine.documents import load_suite, load_twin

demo = importlib.import_module("tests.e2e.framework_demo_agents")


@pytest.fixture(scope="module")
def world() -> tuple[Any, dict[str, Any]]:
    twin = load_twin(TWIN_FILE)
    return twin, {s.name: s for s in load_suite("demo", twin)}


def test_a_langgraph_agent_in_process_is_graded_on_the_twin(world: tuple[Any, dict[str, Any]]) -> None:
    from agenttwin.integrations import langgraph

    twin, scenarios = world
    agent = langgraph.agent(demo.langgraph_agent("1.3.0"), name="support-bot", version="1.3.0")
    case = simulate_case(
        agent, scenarios["refund-timeout-after-mutation"], twin, case_seed=1, case_id="c1", agent_spec="python:x:y"
    )
    assert case.final_state["orders"]["ORD-1001"]["refund_count"] == 2  # 1.3.0's blind retry, on LangGraph
    assert [r.tool for r in case.records] == ["lookup_order", "refund_payment", "refund_payment", "send_email"]
    assert case.output is not None and case.output.startswith("Done!")
    assert [(f.label, f.field) for f in case.claim_findings] == [("CLAIM_INFERRED", "claimed_outcome")]
    assert case.agent_finding is None and case.agent_version == "1.3.0"


def fails(case: Case) -> Outcome:
    raise RuntimeError("the model provider is down")


def test_the_server_answers_the_contracts_edges() -> None:
    with AgentServer(fails, name="support-bot", version="2.0") as server:
        run = f"{server.url}/run"
        pre = httpx.post(run, json={"preflight": True, "input": "x"}, timeout=10)
        assert pre.status_code == 200
        assert pre.json() == {"output": "", "status": "completed", "agent_name": "support-bot", "agent_version": "2.0"}
        other = httpx.post(run, json={"input": "hi", "agent_version": "1.0"}, timeout=10)
        assert (other.status_code, other.json()["error"]["code"]) == (404, "UNKNOWN_VERSION")
        assert httpx.post(run, json={"session_id": "s"}, timeout=10).status_code == 400
        assert httpx.post(run, content=b"not json", timeout=10).status_code == 400
        assert httpx.post(f"{server.url}/elsewhere", json={"input": "hi"}, timeout=10).status_code == 404
        broken = httpx.post(run, json={"input": "hi"}, timeout=10)
        assert broken.status_code == 500
        assert broken.json()["error"] == {"code": "AGENT_ERROR", "message": "RuntimeError: the model provider is down"}
